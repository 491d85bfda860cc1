package nemesis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

// clockAim places a clock jump where it does harm, as PauseHolder places
// a pause: a client that read under a lease is stopped at its
// write-checked failpoint (it has passed its lease check), the jump is
// made there, and its write waits until another client has taken the
// lock and read under it — at most MaxWait — and then goes out. (Let go
// at the other's acquire, the stale write could still land before the
// other's read, and nothing would be lost.) A jump that a holder's
// keepalive notices before the holder writes, or one that lands between
// two holds, ends no lease early that anyone still acts on.
//
// The wait stands for the holder's write being in flight while the
// server's clock jumps; it is not what ends the lease: the client's
// keepalive runs on during it, and without the jump nobody takes over
// and the wait runs to MaxWait for nothing.
type clockAim struct {
	Hold    *Hold
	MaxWait time.Duration
	// Pick, when set, says which readers may be stopped (every one when
	// nil).
	Pick func(process int) bool

	armed atomic.Bool
	once  sync.Once
	picks chan aimPick

	mu       sync.Mutex
	watched  int           // the stopped holder, while a takeover is awaited
	takeover chan struct{} // closed when another process reads
}

type aimPick struct {
	process int
	claim   *Claim
}

func (a *clockAim) init() { a.once.Do(func() { a.picks = make(chan aimPick, 1) }) }

// Observe is a history observer; it never blocks.
func (a *clockAim) Observe(e history.Event) {
	a.init()
	if e.IsNemesis() || e.Type != history.OK {
		return
	}
	if e.F == history.Read {
		a.mu.Lock()
		if a.takeover != nil && e.Process != a.watched {
			close(a.takeover)
			a.takeover = nil
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		if a.Hold == nil || (a.Pick != nil && !a.Pick(e.Process)) || !a.armed.CompareAndSwap(true, false) {
			return
		}
		c := a.Hold.Claim(e.Process)
		select {
		case a.picks <- aimPick{process: e.Process, claim: c}:
		default:
			c.Release()
		}
	}
}

// at waits for a holder stopped at its failpoint, runs jump there, waits
// for a takeover (at most MaxWait) and lets the holder go. It returns
// false, having jumped nothing, when ctx ends first.
func (a *clockAim) at(ctx context.Context, jump func() error) (bool, error) {
	a.init()
	for {
		a.armed.Store(true)
		select {
		case <-ctx.Done():
			a.armed.Store(false)
			select {
			case pk := <-a.picks:
				pk.claim.Release()
			default:
			}
			return false, nil
		case pk := <-a.picks:
			if !pk.claim.Await(ctx, 10*time.Second) {
				pk.claim.Release()
				continue
			}
			err := a.whileStopped(ctx, pk.process, jump)
			pk.claim.Release()
			return err == nil, err
		}
	}
}

// whileStopped runs jump while process waits at its failpoint, then waits
// for another process to read (at most MaxWait). The caller lets the
// process go.
func (a *clockAim) whileStopped(ctx context.Context, process int, jump func() error) error {
	took := make(chan struct{})
	a.mu.Lock()
	a.watched, a.takeover = process, took
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.takeover = nil
		a.mu.Unlock()
	}()
	if err := jump(); err != nil {
		return err
	}
	t := time.NewTimer(a.MaxWait)
	defer t.Stop()
	select {
	case <-took:
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}
