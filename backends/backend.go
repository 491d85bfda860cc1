// Package backends defines what a lock service and its protected resource
// offer the harness: a Client that a single logical process drives through
// acquire → read → write → release (whose errors lockclient.Outcome, the
// one rule for users' clients and these alike, turns into Jepsen's ok /
// fail / info honestly), and the lease bookkeeping every recipe shares (Leases, Grant: lease.go). Each lock
// service is one package below this one; none of them knows about
// histories or faults, and none keeps its own table of held locks.
package backends

import "context"

// Client is one process's view of a lock service and the storage it guards.
// A Client is used by one goroutine at a time; its methods block.
//
// Errors decide the op's outcome by lockclient.Outcome, the one rule for
// every client: nil is ok; lockclient.ErrFenced or any error wrapped by
// lockclient.Fail is fail (it certainly did not happen); anything else is
// info (the outcome is unknown), after which the harness retires the
// process and opens a fresh Client.
type Client interface {
	// Acquire blocks until the lock on key is held and returns its fencing
	// token (0 when the recipe has none).
	Acquire(ctx context.Context, key string) (token uint64, err error)
	// Read returns the resource's value, presenting token to the storage.
	Read(ctx context.Context, key string, token uint64) (int64, error)
	// Write stores value, presenting token; prev is what the section read
	// (for the history: storage writes are blind).
	Write(ctx context.Context, key string, token uint64, prev, value int64) error
	// Release gives up the lock on key.
	Release(ctx context.Context, key string) error
	// Close ends the client's sessions.
	Close() error
}

// LockFreeReader is a client that can also read the resource without
// holding its lock, as the lock-free reads of --read-mix do (Jepsen's
// lock-set workload mixes them with its locked adds). Such a read presents
// no token: the storage never refuses it as stale and it moves no fence.
// Every built-in client is one (through its fenced.Guard).
type LockFreeReader interface {
	ReadLockFree(ctx context.Context, key string) (int64, error)
}

// failpointKey carries a failpoint hook in a context.
type failpointKey struct{}

// WithFailpoint returns ctx carrying hook, which a recipe calls at its
// named failpoints (see Failpoint).
func WithFailpoint(ctx context.Context, hook func(name string)) context.Context {
	return context.WithValue(ctx, failpointKey{}, hook)
}

// Failpoint marks a point in a recipe where a fault can be injected
// precisely, as etcd's robustness tests do with gofail. Every recipe's
// writes pass Failpoint(ctx, lockclient.FailpointWriteChecked) (in fenced.Guard, the
// one place) after the last check that the lease is still held and before
// the write leaves the client: the gap in
// which a paused holder does its damage (it wakes after its lease ran out
// and writes anyway). Without a hook it does nothing.
func Failpoint(ctx context.Context, name string) {
	if hook, ok := ctx.Value(failpointKey{}).(func(string)); ok && hook != nil {
		hook(name)
	}
}

// FailpointHook is the hook ctx carries, or nil: for clients that run a
// recipe elsewhere (an agent) and pass the failpoint on.
func FailpointHook(ctx context.Context) func(string) {
	hook, _ := ctx.Value(failpointKey{}).(func(string))
	return hook
}
