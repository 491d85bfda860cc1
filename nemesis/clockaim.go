package nemesis

import (
	"context"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

// clockAim places a clock jump where it does harm, through the aim
// PauseHolder uses too (holderAim): a client that read under a lease is
// stopped at its write-checked failpoint (it has passed its lease check),
// the jump is made there, and its write waits until another client has
// taken the lock and read under it — at most MaxWait — and then goes out.
// (Let go at the other's acquire, the stale write could still land before
// the other's read, and nothing would be lost.) A jump that a holder's
// keepalive notices before the holder writes, or one that lands between
// two holds, ends no lease early that anyone still acts on.
type clockAim struct {
	holderAim
	takeoverWait
}

// Observe is a history observer; it never blocks. A read that ends the
// wait for a takeover picks no holder.
func (a *clockAim) Observe(e history.Event) {
	if a.takeoverWait.Observe(e) {
		return
	}
	a.holderAim.Observe(e)
}

// at waits for a holder stopped at its failpoint, runs jump there, waits
// for a takeover (at most MaxWait) and lets the holder go. It returns
// false, having jumped nothing, when ctx ends first.
func (a *clockAim) at(ctx context.Context, jump func() error) (bool, error) {
	return a.holderAim.at(ctx, func(process int) error { return a.whileStopped(ctx, process, jump) })
}

// takeoverWait holds a stopped holder's write back until another client
// has read under the lock, as clock-jump and clock-jump-quorum both do.
//
// The wait stands for the holder's write being in flight while the
// server's clock jumps; it is not what ends the lease: the client's
// keepalive runs on during it, and without the jump nobody takes over
// and the wait runs to MaxWait for nothing.
type takeoverWait struct {
	MaxWait time.Duration

	mu       sync.Mutex
	watched  int           // the stopped holder, while a takeover is awaited
	takeover chan struct{} // closed when another process reads
}

// Observe is a history observer: an ok read by another process than the
// stopped holder, while a takeover is awaited, ends the wait. It says
// whether it did, and never blocks.
func (w *takeoverWait) Observe(e history.Event) bool {
	if e.IsNemesis() || e.Type != history.OK || e.F != history.Read {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.takeover == nil || e.Process == w.watched {
		return false
	}
	close(w.takeover)
	w.takeover = nil
	return true
}

// whileStopped runs jump while process waits at its failpoint, then waits
// for another process to read (at most MaxWait). The caller lets the
// process go.
func (w *takeoverWait) whileStopped(ctx context.Context, process int, jump func() error) error {
	took := make(chan struct{})
	w.mu.Lock()
	w.watched, w.takeover = process, took
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.takeover = nil
		w.mu.Unlock()
	}()
	if err := jump(); err != nil {
		return err
	}
	t := time.NewTimer(w.MaxWait)
	defer t.Stop()
	select {
	case <-took:
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}
