package fenced

import (
	"context"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Guard is how every lock client reaches the storage it protects: an op
// goes out only while the client's lease check passes, and a write passes
// the write-checked failpoint between that check and leaving — the gap a
// paused holder does its damage in. Every recipe reads and writes through
// a Guard, so the check-then-send rule and the failpoint live here and in
// no client. A client embeds its Guard: Read and Write have the
// backends.Client signatures.
type Guard struct {
	// Storage is where the ops go once the check passed.
	Storage Storage
	// Check is the client's lease check: nil while it believes it holds
	// key with token (see backends.Leases.Check).
	Check func(key string, token uint64) error
	// Trust makes the client trust its grant, as Jepsen's etcd client did
	// (--lease-check none): Check still runs (an in-process client's
	// freeze gate lives there) but its verdict is ignored, so a holder
	// reads and writes whatever became of its lease. Fencing, if the
	// storage checks tokens, is then the only defence.
	Trust bool
}

// TrustGrants turns Trust on. Every client that embeds a Guard has it, and
// registry.ApplyLeaseCheck calls it for --lease-check none.
func (g *Guard) TrustGrants() { g.Trust = true }

// check is the lease check as the guard applies it.
func (g Guard) check(key string, token uint64) error {
	if err := g.Check(key, token); err != nil && !g.Trust {
		return err
	}
	return nil
}

// Read reads key only while the lease check passes.
func (g Guard) Read(ctx context.Context, key string, token uint64) (int64, error) {
	if err := g.check(key, token); err != nil {
		return 0, err
	}
	return g.Storage.Read(ctx, key, token)
}

// ReadLockFree reads key without the lock (the workload's --read-mix): the
// client holds no lease, so there is nothing to check, and the read
// presents no token. A client that embeds a Guard is a
// backends.LockFreeReader through it.
func (g Guard) ReadLockFree(ctx context.Context, key string) (int64, error) {
	return g.Storage.ReadLockFree(ctx, key)
}

// Write writes key only while the lease check passes, with the
// write-checked failpoint between the check and the write. prev (what the
// section read) is for the history only: storage writes are blind.
func (g Guard) Write(ctx context.Context, key string, token uint64, _, value int64) error {
	if err := g.check(key, token); err != nil {
		return err
	}
	backends.Failpoint(ctx, lockclient.FailpointWriteChecked)
	return g.Storage.Write(ctx, key, token, value)
}
