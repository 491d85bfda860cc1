package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

// ClockJumpQuorum is Martin Kleppmann's clock-jump case against Redlock,
// step by step. With five masters A..E: a client is cut off from D and E
// (a minority), so when it takes the lock it holds it on A, B and C only —
// a bare majority. Then C's wall clock jumps forward: C's copy of the lock
// expires at once, and another client, which reaches every master, takes
// the lock on C, D and E. Two clients hold a majority each, and neither
// paused or could notice anything.
//
// Start cuts a client slot drawn at random off from a random minority of
// the servers, waits (up to WaitHolder) until a process of that slot has
// taken the lock since, then jumps the clock of one server it still
// reaches, aimed as clock-jump aims (clockAim): while that process waits
// at its write failpoint, after its last lease check, and until another
// client has taken the lock. Its targets name the slot, the servers cut
// from it and the server whose clock jumped. Stop heals the cut and jumps
// the clock back.
type ClockJumpQuorum struct {
	*clocks
	Slots  func(ctx context.Context) ([]string, error)
	SlotOf func(process int) string
	// WaitHolder bounds the wait for the cut slot to take the lock
	// (default 10 s); a slot that does not is healed and the schedule
	// tries again later.
	WaitHolder time.Duration

	// Aim, when set, makes the jump at the cut holder's write failpoint.
	Aim *clockAim

	cut Partition

	mu       sync.Mutex
	watching string        // the cut slot, while Start waits for it
	acquired chan struct{} // closed when it takes the lock
	cutHeld  map[int]bool  // processes of the cut slot that took the lock since the cut
}

func (q *ClockJumpQuorum) Name() string { return "clock-jump-quorum" }

// Observe is a history observer: an ok acquire by a process of the slot
// Start watches wakes it. It never blocks.
func (q *ClockJumpQuorum) Observe(e history.Event) {
	if e.IsNemesis() || e.F != history.Acquire || e.Type != history.OK {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.watching != "" && q.SlotOf(e.Process) == q.watching {
		if q.cutHeld == nil {
			q.cutHeld = map[int]bool{}
		}
		q.cutHeld[e.Process] = true
		if q.acquired != nil {
			close(q.acquired)
			q.acquired = nil
		}
	}
}

// heldSinceCut says whether process took the lock while cut off.
func (q *ClockJumpQuorum) heldSinceCut(process int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cutHeld[process]
}

func (q *ClockJumpQuorum) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	slots, err := q.Slots(ctx)
	if err != nil || len(slots) < 2 {
		return nil, err
	}
	slot := slots[rng.IntN(len(slots))]
	servers := slices.Clone(q.servers)
	rng.Shuffle(len(servers), func(i, j int) { servers[i], servers[j] = servers[j], servers[i] })
	minority := servers[:(len(servers)-1)/2]
	reached := servers[len(minority):]
	jumped := reached[rng.IntN(len(reached))]

	acquired := make(chan struct{})
	q.mu.Lock()
	q.watching, q.acquired, q.cutHeld = slot, acquired, nil
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.watching, q.acquired = "", nil
		q.mu.Unlock()
	}()
	q.cut.Label, q.cut.Cluster = q.Name(), q.cluster
	g := Grudge{}
	g.cutAcross([]string{slot}, minority)
	if err := q.cut.apply(ctx, g); err != nil {
		return nil, err
	}
	q.log("%s: %s cut off from %v; waiting for it to take the lock on the other %d servers", q.Name(), slot, sorted(minority), len(reached))
	// The clock is read now, so that the jump follows the acquire as
	// closely as one exec can.
	before := q.readAll(ctx, []string{jumped})
	wait := q.WaitHolder
	if wait == 0 {
		wait = 10 * time.Second
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-acquired:
	case <-ctx.Done():
		return nil, nil
	case <-t.C:
		q.log("%s: %s took no lock within %s", q.Name(), slot, wait)
		return nil, nil
	}
	jump := func() error { return q.move(ctx, q.Name(), []string{jumped}, before) }
	if q.Aim != nil {
		aimed, err := q.Aim.at(ctx, jump)
		if err != nil || !aimed {
			return nil, err
		}
	} else if err := jump(); err != nil {
		return nil, err
	}
	targets := []string{slot}
	for _, n := range sorted(minority) {
		targets = append(targets, fmt.Sprintf("%s cut from %s", n, slot))
	}
	return append(targets, clockLabels([]string{jumped}, q.offset)...), nil
}

// Stop heals the cut, then puts the clock back.
func (q *ClockJumpQuorum) Stop(ctx context.Context) error {
	cerr := q.cut.Stop(ctx)
	if err := q.restore(ctx, q.Name()); err != nil {
		return err
	}
	return cerr
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
