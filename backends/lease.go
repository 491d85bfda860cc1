package backends

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/lockclient"
)

// Lease is one lock a client holds, as its bookkeeping sees it.
type Lease interface {
	// Token is the fencing token the lock was granted with.
	Token() uint64
	// Lost reports whether the client has learnt that the lock is gone.
	Lost() bool
}

// Leases is a client's bookkeeping of the locks it holds, by key: every
// recipe puts a lock here when it is granted, checks it before each read
// and write, and takes it out on release. It is safe for concurrent use
// (a recipe's keepalive runs beside the client); the zero value is empty
// and ready.
type Leases[L Lease] struct {
	mu   sync.Mutex
	held map[string]L
}

// Free is a definite failure when the client already holds key: a second
// acquire of the same key by one client is refused before anything is
// sent.
func (s *Leases[L]) Free(key string) error {
	if _, ok := s.Get(key); ok {
		return lockclient.Failf("already holding %s", key)
	}
	return nil
}

// Put records that key is held with l.
func (s *Leases[L]) Put(key string, l L) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[string]L{}
	}
	s.held[key] = l
}

// Get is the lock held on key, whatever its state.
func (s *Leases[L]) Get(key string) (L, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.held[key]
	return l, ok
}

// Current is the lock on key granted with token, while the client still
// believes it holds it; otherwise lockclient.ErrLeaseLost: the client held no lock on
// key, or held it with another token, or has learnt the lease is gone.
func (s *Leases[L]) Current(key string, token uint64) (L, error) {
	l, ok := s.Get(key)
	if !ok || l.Token() != token || l.Lost() {
		var none L
		return none, lockclient.ErrLeaseLost
	}
	return l, nil
}

// Check is Current without the lock: the lease check of a read or write.
func (s *Leases[L]) Check(key string, token uint64) error {
	_, err := s.Current(key, token)
	return err
}

// Take removes the lock on key for its release; releasing a key the client
// does not hold is a definite failure.
func (s *Leases[L]) Take(key string) (L, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.held[key]
	if !ok {
		return l, lockclient.Failf("release of %s without holding it", key)
	}
	delete(s.held, key)
	return l, nil
}

// TakeAll removes every lock, for the client's Close.
func (s *Leases[L]) TakeAll() []L {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]L, 0, len(s.held))
	for k, l := range s.held {
		out = append(out, l)
		delete(s.held, k)
	}
	return out
}

// Grant is a Lease that its client keeps alive itself: the token, whether
// the keepalive has learnt that the lease is gone, and the keepalive's
// life. Recipes embed it in what else they keep for a held lock.
type Grant struct {
	token   uint64
	lost    atomic.Bool
	started atomic.Bool
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewGrant is a grant of token with no keepalive running yet.
func NewGrant(token uint64) *Grant {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	return &Grant{token: token, ctx: ctx, cancel: cancel, done: done}
}

func (g *Grant) Token() uint64 { return g.token }
func (g *Grant) Lost() bool    { return g.lost.Load() }

// KeepAlive calls renew every period on a goroutine of its own until the
// grant is stopped, or until renew reports the lease lost, which the grant
// then remembers. renew gets a context that ends when the grant is
// stopped; a renewal that returns after the stop is not counted.
func (g *Grant) KeepAlive(period time.Duration, renew func(stopped context.Context) (lost bool)) {
	g.started.Store(true)
	go func() {
		defer close(g.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-g.ctx.Done():
				return
			case <-t.C:
			}
			lost := renew(g.ctx)
			if g.ctx.Err() != nil {
				return
			}
			if lost {
				g.lost.Store(true)
				return
			}
		}
	}()
}

// Stop ends the keepalive and waits until it has returned, so that what it
// used is the caller's again.
func (g *Grant) Stop() {
	g.cancel()
	if g.started.Load() {
		<-g.done
	}
}

// Abandon ends the keepalive without waiting for it.
func (g *Grant) Abandon() { g.cancel() }
