// Package memory is an in-process lease lock service: real concurrency,
// real expiry, strictly increasing tokens, and a keepalive the holder runs.
// It is what `check --backend memory` tests without Docker, and what
// `check lockd` serves over the network in a container. Its clients can be
// frozen whole — work and keepalive together — the way a GC pause or the
// cgroup freezer stops a process.
package memory

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/lockclient"
)

// ErrNotHolder answers a renewal or release from a lease that has expired
// or been taken over.
var ErrNotHolder = errors.New("not the holder: the lease expired or was taken over")

type lock struct {
	token   uint64 // the current (or last) holder's token
	held    bool
	expires time.Time
	changed chan struct{} // closed and replaced when the lock is freed
	// queue holds the waiters in arrival order: the lock is granted to
	// the head only, as etcd's mutex and ZooKeeper's lock recipe grant in
	// creation order. Without it a client that releases and at once
	// acquires again starves the others.
	queue []*int
}

func (l *lock) wake() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *lock) leave(ticket *int) {
	for i, t := range l.queue {
		if t == ticket {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			if i == 0 {
				l.wake() // the next waiter is now the head
			}
			return
		}
	}
}

// Service grants one lease per key at a time. A lease expires ttl after it
// was granted or last renewed; the next acquire then gets a higher token.
type Service struct {
	ttl   time.Duration
	mu    sync.Mutex
	locks map[string]*lock
}

// NewService makes a lock service whose leases last ttl.
func NewService(ttl time.Duration) *Service {
	return &Service{ttl: ttl, locks: map[string]*lock{}}
}

// TTL is the lease length.
func (s *Service) TTL() time.Duration { return s.ttl }

func (s *Service) lock(key string) *lock {
	l := s.locks[key]
	if l == nil {
		l = &lock{changed: make(chan struct{})}
		s.locks[key] = l
	}
	return l
}

// Acquire queues for key and blocks until it is first in line and the key
// is free or its lease has expired, then grants a new lease with the next
// token. If ctx ends first the lock was never granted: a definite failure.
func (s *Service) Acquire(ctx context.Context, key string) (uint64, error) {
	ticket := new(int)
	s.mu.Lock()
	l := s.lock(key)
	l.queue = append(l.queue, ticket)
	s.mu.Unlock()
	for {
		s.mu.Lock()
		now := time.Now()
		if l.queue[0] == ticket && (!l.held || now.After(l.expires)) {
			l.queue = l.queue[1:]
			l.wake() // the new head waits for this lease's expiry now
			l.held = true
			l.token++
			l.expires = now.Add(s.ttl)
			t := l.token
			s.mu.Unlock()
			return t, nil
		}
		wait := time.Duration(-1)
		if l.held {
			wait = time.Until(l.expires) + time.Millisecond
		}
		changed := l.changed
		s.mu.Unlock()
		var expiry <-chan time.Time
		var timer *time.Timer
		if wait > 0 {
			timer = time.NewTimer(wait)
			expiry = timer.C
		}
		select {
		case <-ctx.Done():
			s.mu.Lock()
			l.leave(ticket)
			s.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return 0, lockclient.Failf("lock not granted: %v", ctx.Err())
		case <-changed:
		case <-expiry:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// Renew extends the lease of token's holder by the TTL.
func (s *Service) Renew(_ context.Context, key string, token uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lock(key)
	if !l.held || l.token != token || time.Now().After(l.expires) {
		return ErrNotHolder
	}
	l.expires = time.Now().Add(s.ttl)
	return nil
}

// Release frees key if token still holds it.
func (s *Service) Release(_ context.Context, key string, token uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lock(key)
	if !l.held || l.token != token {
		return ErrNotHolder
	}
	l.held = false
	l.wake()
	return nil
}
