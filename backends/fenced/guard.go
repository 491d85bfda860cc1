package fenced

import (
	"context"

	"github.com/fencecheck/fencecheck/backends"
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
}

// Read reads key only while the lease check passes.
func (g Guard) Read(ctx context.Context, key string, token uint64) (int64, error) {
	if err := g.Check(key, token); err != nil {
		return 0, err
	}
	return g.Storage.Read(ctx, key, token)
}

// Write writes key only while the lease check passes, with the
// write-checked failpoint between the check and the write. prev (what the
// section read) is for the history only: storage writes are blind.
func (g Guard) Write(ctx context.Context, key string, token uint64, _, value int64) error {
	if err := g.Check(key, token); err != nil {
		return err
	}
	backends.Failpoint(ctx, backends.FailpointWriteChecked)
	return g.Storage.Write(ctx, key, token, value)
}
