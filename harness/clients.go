package harness

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/memory"
)

// OpenClient opens the client a spec describes, in the process that will
// run it: `check agent` in a client container.
func OpenClient(ctx context.Context, spec backends.ClientSpec) (backends.Client, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
	var storage fenced.Storage
	switch spec.Storage {
	case "fenced":
		if spec.StorageURL == "" {
			return nil, fmt.Errorf("storage fenced needs its URL")
		}
		storage = &fenced.Remote{URL: spec.StorageURL, Client: hc}
	}
	switch spec.Backend {
	case "memory":
		if len(spec.Endpoints) != 1 {
			return nil, fmt.Errorf("the memory backend needs one lockd endpoint, got %v", spec.Endpoints)
		}
		if storage == nil {
			return nil, fmt.Errorf("the memory backend cannot use storage %q", spec.Storage)
		}
		return memory.NewClient(&memory.Remote{URL: spec.Endpoints[0], Client: hc}, storage, spec.LeaseTTL, nil), nil
	case "etcd":
		if spec.Storage != "etcd" && storage == nil {
			return nil, fmt.Errorf("the etcd backend cannot use storage %q", spec.Storage)
		}
		return etcd.NewClient(spec.Endpoints, spec.LeaseTTL, storage)
	}
	return nil, fmt.Errorf("no client for backend %q", spec.Backend)
}
