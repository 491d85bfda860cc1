package registry

// The storages: the shared ones every backend can guard (the fenced node,
// a PostgreSQL row), registered here, and the ones a --client program
// writes to itself.

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/lockclient"
)

// StorageKind is a resource every backend can guard, run in the storage
// node.
type StorageKind struct {
	Name string
	// Start runs the storage's server in the storage node and returns
	// the address clients use and a secret (a password), if any.
	Start func(ctx context.Context, c nodes.Nodes, s Setup) (url, secret string, err error)
	// Open makes the storage's client in an agent, checking tokens as mode
	// says where the storage checks them itself.
	Open func(ctx context.Context, spec backends.ClientSpec, mode fenced.Mode) (fenced.Storage, error)
	// Client, when set, lets a --client program write to this storage
	// itself, with its own fence check.
	Client *ClientStorage
	// CoreImage: the storage's server runs on the core node image
	// (Info.CoreImage); false, it needs the whole node image.
	CoreImage bool
}

// ClientStorage is a storage a --client program reads and writes itself,
// with its own fence check (its SQL, its guarded transaction): fencecheck
// readies it, tells the program where it is and reads the final values
// itself, so the check judges the program's own fencing. It never checks a
// token itself.
type ClientStorage struct {
	// Prepare readies the storage for the run's keys once the servers and
	// the storage run (a row per key, value 0, fence 0); optional.
	Prepare func(ctx context.Context, c nodes.Nodes, keys []string) error
	// Describe is the storage part of the program's init message, from
	// what StorageKind.Start returned (url, secret; empty for a backend's
	// own storage) and the lock service's endpoints.
	Describe func(url, secret string, endpoints []string) lockclient.Storage
	// Read reads key's value itself, inside the cluster (a missing key is
	// 0), given the lock service's endpoints; its error says the value
	// could not be read.
	Read func(ctx context.Context, c nodes.Nodes, endpoints []string, key string) (int64, error)
}

// ClientStorage finds the storage a --client program can write to
// itself: a shared one, or the backend's own.
func (b Info) ClientStorage(name string) (*ClientStorage, bool) {
	if k, ok := storages[name]; ok && k.Client != nil {
		return k.Client, true
	}
	cs, ok := b.ClientStorages[name]
	return cs, ok && cs != nil
}

// ClientStorageNames lists the storages a --client program of backend b
// can write to itself, sorted.
func (b Info) ClientStorageNames() []string {
	var out []string
	for name, k := range storages {
		if k.Client != nil {
			out = append(out, name)
		}
	}
	for name := range b.ClientStorages {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

var storages = map[string]StorageKind{}

// RegisterStorage adds a shared storage.
func RegisterStorage(k StorageKind) {
	if _, dup := storages[k.Name]; dup {
		panic(fmt.Sprintf("registry: storage %q registered twice", k.Name))
	}
	storages[k.Name] = k
}

// Storage finds a shared storage by name.
func Storage(name string) (StorageKind, bool) {
	k, ok := storages[name]
	return k, ok
}

// SharedStorages lists the shared storages' names, sorted.
func SharedStorages() []string {
	var out []string
	for k := range storages {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsSharedStorage reports whether storage is one every backend can guard
// (the fenced node, a PostgreSQL row), not a backend's own.
func IsSharedStorage(name string) bool {
	_, ok := storages[name]
	return ok
}

// DefaultStorage is the shared storage a test uses unless told otherwise:
// the fenced storage node, which every backend and cluster can use.
const DefaultStorage = "fenced"

func init() {
	RegisterStorage(StorageKind{
		Name: DefaultStorage,
		// The fenced node is the check binary itself.
		CoreImage: true,
		Start: func(ctx context.Context, c nodes.Nodes, s Setup) (string, string, error) {
			url, err := fenced.StartNode(ctx, c, s.Fencing)
			return url, "", err
		},
		Open: func(_ context.Context, spec backends.ClientSpec, _ fenced.Mode) (fenced.Storage, error) {
			if spec.StorageURL == "" {
				return nil, errors.New("storage fenced needs its URL")
			}
			return &fenced.Remote{URL: spec.StorageURL, Client: HTTPClient()}, nil
		},
	})
}
