package nemesis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

// holderAim places a fault on a lease holder at the one moment that
// proves something: after its last lease check and before its write. While
// a fault's Start waits, the aim is armed; the first client process to
// read under a lease then is claimed (Claims), stops at its write-checked
// failpoint (lockclient.FailpointWriteChecked), and the fault acts on it
// there. Freezing a container or rewriting a clock takes tens of
// milliseconds; aimed at a moment without a failpoint, the fault would
// land before the check (which then sees the lease gone) or after the
// write, and prove nothing.
//
// pause-holder freezes the stopped holder; clock-jump moves the servers'
// clocks under it (clockAim). Both aim through this one type.
type holderAim struct {
	// Claims stops the chosen process at its failpoint; nil aims at
	// nothing.
	Claims *Claims

	armed atomic.Bool
	once  sync.Once
	picks chan aimPick
}

// aimPick is the process the aim claimed, and its claim.
type aimPick struct {
	process int
	key     string
	claim   *Claim
}

func (a *holderAim) init() { a.once.Do(func() { a.picks = make(chan aimPick, 1) }) }

// Observe is a history observer: the first ok read after the aim is armed
// picks its process and claims it, before it can send its write. It never
// blocks.
func (a *holderAim) Observe(e history.Event) {
	a.init()
	if e.IsNemesis() || e.F != history.Read || e.Type != history.OK || a.Claims == nil {
		return
	}
	if !a.armed.CompareAndSwap(true, false) {
		return
	}
	c := a.Claims.Claim(e.Process)
	select {
	case a.picks <- aimPick{process: e.Process, key: e.Key, claim: c}:
	default:
		c.Release()
	}
}

// at waits for a holder stopped at its failpoint, runs act on its process
// there and lets the holder go. A holder whose section ends without a
// write (a refused read, a lost lease) is let go, and the next one
// awaited. It returns false, having run nothing, when ctx ends first;
// else whether act succeeded, and act's error.
func (a *holderAim) at(ctx context.Context, act func(process int) error) (bool, error) {
	return a.atPick(ctx, func(pk aimPick) error { return act(pk.process) })
}

// atPick is at, with act told the key the holder read too.
func (a *holderAim) atPick(ctx context.Context, act func(aimPick) error) (bool, error) {
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
			err := act(pk)
			pk.claim.Release()
			return err == nil, err
		}
	}
}
