package harness

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
)

func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
}

// StorageKind is a resource every backend can guard, run in the storage
// node. Each adds itself from its own file (storage_<name>.go).
type StorageKind struct {
	Name string
	// Start runs the storage's server in the storage node and returns
	// the address clients use and a secret (a password), if any.
	Start func(ctx context.Context, s *dockerSystem) (url, secret string, err error)
	// Open makes the storage's client in an agent.
	Open func(ctx context.Context, spec backends.ClientSpec) (fenced.Storage, error)
}

// Storages lists the shared storages by name.
var Storages = map[string]StorageKind{}

func registerStorage(k StorageKind) { Storages[k.Name] = k }

func init() {
	registerStorage(StorageKind{
		Name: "fenced",
		Start: func(ctx context.Context, s *dockerSystem) (string, string, error) {
			mode, err := fenced.ParseMode(s.cfg.Fencing)
			if err != nil {
				return "", "", err
			}
			url, err := fenced.StartNode(ctx, s.cluster, mode)
			return url, "", err
		},
		Open: func(_ context.Context, spec backends.ClientSpec) (fenced.Storage, error) {
			if spec.StorageURL == "" {
				return nil, fmt.Errorf("storage fenced needs its URL")
			}
			return &fenced.Remote{URL: spec.StorageURL, Client: httpClient()}, nil
		},
	})
}

// OpenClient opens the client a spec describes, in the process that will
// run it: `check agent` in a client container.
func OpenClient(ctx context.Context, spec backends.ClientSpec) (backends.Client, error) {
	b, ok := backendInfo(spec.Backend)
	if !ok {
		return nil, fmt.Errorf("no client for backend %q", spec.Backend)
	}
	var storage fenced.Storage
	if k, ok := Storages[spec.Storage]; ok {
		st, err := k.Open(ctx, spec)
		if err != nil {
			return nil, err
		}
		storage = st
	}
	return b.OpenClient(ctx, spec, storage)
}
