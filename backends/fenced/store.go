// Package fenced is the protected resource: a register per key that checks
// fencing tokens — it remembers the highest token it has admitted and
// refuses anything lower, so a holder whose lease ran out while it was
// paused cannot write over its successor. It lives under backends
// because every lock service's test writes to it; it is not a lock service
// and never hands out tokens. Guard is the one way a lock client reaches
// it: the lease check and the write-checked failpoint live there.
package fenced

import (
	"context"
	"fmt"
	"sync"

	"github.com/fencecheck/fencecheck/lockclient"
)

// Mode says which ops the storage checks tokens on.
type Mode string

const (
	// None checks nothing: the storage trusts every writer.
	None Mode = "none"
	// Writes refuses stale writes only; reads are never refused and do not
	// move the fence.
	Writes Mode = "writes"
	// All refuses any read or write below the highest token seen, and both
	// move the fence.
	All Mode = "all"
)

// Modes lists the accepted modes, for flag validation.
var Modes = []Mode{None, Writes, All}

// ParseMode accepts "none", "writes" or "all".
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown fencing mode %q (accepted: none, writes, all)", s)
}

type cell struct {
	value int64
	fence uint64
}

// Storage is the fenced register as a client sees it: the in-memory Store
// itself, or the same store across the network.
type Storage interface {
	Read(ctx context.Context, key string, token uint64) (int64, error)
	Write(ctx context.Context, key string, token uint64, value int64) error
	// ReadLockFree reads key for a reader that holds no lock (the
	// workload's --read-mix): it presents no token, so it is never
	// refused as stale and never moves the fence, whatever the mode.
	ReadLockFree(ctx context.Context, key string) (int64, error)
}

// Store is the in-memory fenced register set. It is linearizable: one mutex
// orders every op.
type Store struct {
	mode  Mode
	mu    sync.Mutex
	cells map[string]*cell
}

// NewStore makes an empty store checking tokens per mode.
func NewStore(mode Mode) *Store { return &Store{mode: mode, cells: map[string]*cell{}} }

// Mode is the store's fencing mode.
func (s *Store) Mode() Mode { return s.mode }

func (s *Store) cell(key string) *cell {
	c := s.cells[key]
	if c == nil {
		c = &cell{}
		s.cells[key] = c
	}
	return c
}

// Read returns key's value, or ErrFenced when the mode checks reads and
// token is below the fence.
func (s *Store) Read(_ context.Context, key string, token uint64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cell(key)
	if s.mode == All {
		if token < c.fence {
			return 0, lockclient.ErrFenced
		}
		c.fence = token
	}
	return c.value, nil
}

// ReadLockFree returns key's value to a reader that holds no lock: no
// token is presented, none is checked, and the fence stays where it is.
func (s *Store) ReadLockFree(_ context.Context, key string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cell(key).value, nil
}

// Write stores value, or returns ErrFenced when the mode checks writes and
// token is below the fence.
func (s *Store) Write(_ context.Context, key string, token uint64, value int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cell(key)
	if s.mode != None {
		if token < c.fence {
			return lockclient.ErrFenced
		}
		c.fence = token
	}
	c.value = value
	return nil
}
