package nemesis

// Several holders at once, and freezes sized to the lease. pause-holder
// can hold up to --holders-at-once frozen holders at a time, one per key:
// each is a lane with its own schedule, its own claim and its own heal
// (Schedule runs a fault's Lanes each on its own). And with --pause-until
// granted a freeze ends once the frozen holder's successor has read under
// the lock, not after the fixed pause duration.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// The --pause-until words.
const (
	// PauseUntilDuration holds a freeze for the pause duration (the
	// default).
	PauseUntilDuration = "duration"
	// PauseUntilGranted holds a freeze until the successor's read under
	// the lock is seen, plus GrantedMargin.
	PauseUntilGranted = "granted"
)

// GrantedMargin is how long a --pause-until granted freeze lasts past the
// successor's read: the history has the read once it returned, and the
// margin lets any write it led to go out before the late write does.
const GrantedMargin = 100 * time.Millisecond

var (
	holdersAtOnceFlag = usage.Flag{Name: "holders-at-once", Usage: "with --keys k, how many lease holders pause-holder keeps frozen at a time, one per key, each with its own schedule (1 to k; default 1)",
		Check: func(v string) error {
			if v == "" {
				return nil
			}
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				return fmt.Errorf("%q is not a number of holders (accepted: 1 to --keys)", v)
			}
			return nil
		}}
	pauseUntilFlag = usage.Flag{Name: "pause-until", Usage: "how long pause-holder keeps a holder frozen: duration (the pause duration, the default) or granted (until another client has taken the holder's lock and read under it, plus 100ms, at most the pause duration)",
		Check: func(v string) error {
			if v == "" || v == PauseUntilDuration || v == PauseUntilGranted {
				return nil
			}
			return fmt.Errorf("%q is not accepted (accepted: %s, %s)", v, PauseUntilDuration, PauseUntilGranted)
		}}
)

// holdersAtOnce is --holders-at-once, 1 when not given.
func holdersAtOnce(s Settings) int {
	n, err := strconv.Atoi(s.Options[holdersAtOnceFlag.Name])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// checkHoldersAtOnce refuses more holders at once than there are keys:
// each frozen holder is on a key of its own. Its error names the flag.
func checkHoldersAtOnce(s Settings) error {
	v := s.Options[holdersAtOnceFlag.Name]
	if v == "" {
		return nil
	}
	if err := holdersAtOnceFlag.Check(v); err != nil {
		return usage.Errorf(holdersAtOnceFlag.Name, "%v", err)
	}
	if n, _ := strconv.Atoi(v); s.Keys > 0 && n > s.Keys {
		return usage.Errorf(holdersAtOnceFlag.Name, "%d holders at once need at least %d keys, and the run has --keys %d (each frozen holder is on a key of its own: raise --keys, or lower --holders-at-once to at most %d)", n, n, s.Keys, s.Keys)
	}
	return nil
}

// holderGroup is the aim of several lanes at once: each armed lane waits
// for a holder, and the first ok read on a key no lane is on goes to the
// lane armed longest. The key stays the lane's until its heal.
type holderGroup struct {
	claims *Claims

	mu    sync.Mutex
	busy  map[string]int // key → the lane on it
	on    []string       // lane → the key it is on ("" none)
	armed []int          // lanes waiting for a holder, first armed first
	picks []chan aimPick
}

func newHolderGroup(c *Claims, lanes int) *holderGroup {
	g := &holderGroup{claims: c, busy: map[string]int{}, on: make([]string, lanes)}
	for range lanes {
		g.picks = append(g.picks, make(chan aimPick, 1))
	}
	return g
}

// Observe is a history observer: an ok read on a key no lane is on, while
// a lane is armed, claims its process for that lane. It never blocks.
func (g *holderGroup) Observe(e history.Event) {
	if e.IsNemesis() || e.F != history.Read || e.Type != history.OK || g.claims == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.armed) == 0 {
		return
	}
	if _, taken := g.busy[e.Key]; taken {
		return
	}
	lane := g.armed[0]
	g.armed = g.armed[1:]
	g.busy[e.Key], g.on[lane] = lane, e.Key
	c := g.claims.Claim(e.Process)
	select {
	case g.picks[lane] <- aimPick{process: e.Process, key: e.Key, claim: c}:
	default:
		c.Release()
		g.freeLocked(lane)
	}
}

func (g *holderGroup) arm(lane int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range g.armed {
		if l == lane {
			return
		}
	}
	g.armed = append(g.armed, lane)
}

func (g *holderGroup) disarm(lane int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, l := range g.armed {
		if l == lane {
			g.armed = append(g.armed[:i], g.armed[i+1:]...)
			return
		}
	}
}

// free gives the lane's key back: its holder is thawed, or was never
// frozen.
func (g *holderGroup) free(lane int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.freeLocked(lane)
}

func (g *holderGroup) freeLocked(lane int) {
	if k := g.on[lane]; k != "" {
		delete(g.busy, k)
		g.on[lane] = ""
	}
}

// at is holderAim.at for one lane: it waits for a holder on a key no
// other lane is on, stopped at its failpoint, runs act there and lets it
// go. It returns false, having run nothing, when ctx ends first.
func (g *holderGroup) at(ctx context.Context, lane int, act func(aimPick) error) (bool, error) {
	for {
		g.arm(lane)
		select {
		case <-ctx.Done():
			g.disarm(lane)
			select {
			case pk := <-g.picks[lane]:
				pk.claim.Release()
			default:
			}
			g.free(lane)
			return false, nil
		case pk := <-g.picks[lane]:
			if !pk.claim.Await(ctx, 10*time.Second) {
				pk.claim.Release()
				g.free(lane)
				continue
			}
			err := act(pk)
			pk.claim.Release()
			return err == nil, err
		}
	}
}

// successorWait ends a --pause-until granted freeze: it watches the frozen
// holder's key for an ok read by another process — a successor granted the
// lock and reading under it, so the storage has seen the newer token.
type successorWait struct {
	mu      sync.Mutex
	key     string
	process int
	read    chan struct{} // closed at the successor's read; nil when not watching
}

// watch starts watching key for a read by any process but process.
func (w *successorWait) watch(key string, process int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.key, w.process, w.read = key, process, make(chan struct{})
}

func (w *successorWait) clear() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.read = nil
}

// Observe is a history observer; it never blocks.
func (w *successorWait) Observe(e history.Event) {
	if e.IsNemesis() || e.Type != history.OK || e.F != history.Read {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.read == nil || e.Key != w.key || e.Process == w.process {
		return
	}
	select {
	case <-w.read:
	default:
		close(w.read)
	}
}

// wait returns GrantedMargin after the successor's read, at most max from
// now, or when ctx ends.
func (w *successorWait) wait(ctx context.Context, max time.Duration) {
	w.mu.Lock()
	read := w.read
	w.mu.Unlock()
	if read == nil {
		sleep(ctx, max)
		return
	}
	deadline := time.Now().Add(max)
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
		return
	case <-read:
	}
	sleep(ctx, min(GrantedMargin, time.Until(deadline)))
}
