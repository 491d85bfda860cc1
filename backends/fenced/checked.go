package fenced

import (
	"context"

	"github.com/fencecheck/fencecheck/backends"
)

// CheckedRead is how a lock client reads the shared storage: only while
// check (its lease check) passes.
func CheckedRead(ctx context.Context, s Storage, check func() error, key string, token uint64) (int64, error) {
	if err := check(); err != nil {
		return 0, err
	}
	return s.Read(ctx, key, token)
}

// CheckedWrite is how a lock client writes the shared storage: only while
// check passes, with the write-checked failpoint between the check and the
// write — the gap pause-holder aims at — in one place for every recipe.
func CheckedWrite(ctx context.Context, s Storage, check func() error, key string, token uint64, value int64) error {
	if err := check(); err != nil {
		return err
	}
	backends.Failpoint(ctx, backends.FailpointWriteChecked)
	return s.Write(ctx, key, token, value)
}
