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
// step by step. With five masters A..E: a client that holds the lock is
// cut off from D and E (a minority), so from then on its lock lives on A,
// B and C only — a bare majority (its copies on D and E lapse, unrenewed,
// within a TTL). Then C's wall clock jumps forward: C's copy of the lock
// expires at once, and another client, which reaches every master, takes
// the lock on C, D and E. Two clients hold a majority each, and neither
// paused or could notice anything.
//
// Start waits (up to WaitHolder) for the next process to take the lock,
// stops it at its write failpoint (Claims; after its last lease check),
// cuts its slot off from a random minority of the servers and jumps the
// clock of one server the slot still reaches. The holder's write waits
// until another client has taken the lock and read under it — at most
// MaxWait — and then goes out, as clock-jump's aim does (takeoverWait). Its
// targets name the slot, the servers cut from it and the server whose
// clock jumped. Stop heals the cut and jumps the clock back.
//
// The holder is chosen when it takes the lock, and cut off just after,
// rather than cut off first and awaited: a cut client spends a node
// timeout on each unreachable master in every try, so it tries several
// times slower than its rivals and, against four of them, seldom takes the
// lock at all (CI saw a cut slot take none in two 10 s windows).
type ClockJumpQuorum struct {
	*clocks
	SlotOf func(process int) string
	// Claims stops the holder at its write failpoint; nil: the clock jumps
	// as soon as the cut is in place.
	Claims *Claims
	// MaxWait bounds how long the stopped holder waits for a takeover.
	MaxWait time.Duration
	// WaitHolder bounds the wait for someone to take the lock (default
	// 10 s); when nobody does, the schedule tries again later.
	WaitHolder time.Duration

	cut      Partition
	takeover takeoverWait

	mu       sync.Mutex
	acquired chan int // while Start waits: the next process to take the lock
}

func (q *ClockJumpQuorum) Name() string { return "clock-jump-quorum" }

// Observe is a history observer: the first ok acquire while Start waits
// names the holder. It never blocks.
func (q *ClockJumpQuorum) Observe(e history.Event) {
	if e.IsNemesis() || e.Type != history.OK {
		return
	}
	if e.F == history.Read {
		q.takeover.Observe(e)
		return
	}
	if e.F != history.Acquire {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.acquired != nil {
		q.acquired <- e.Process
		q.acquired = nil
	}
}

func (q *ClockJumpQuorum) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	acquired := make(chan int, 1)
	q.mu.Lock()
	q.acquired = acquired
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.acquired = nil
		q.mu.Unlock()
	}()
	wait := q.WaitHolder
	if wait == 0 {
		wait = 10 * time.Second
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var holder int
	select {
	case holder = <-acquired:
	case <-ctx.Done():
		return nil, nil
	case <-t.C:
		q.log("%s: nobody took the lock within %s", q.Name(), wait)
		return nil, nil
	}
	// Claimed before anything else, so that the holder's write waits for
	// the cut and the jump however short its critical section.
	var claim *Claim
	if q.Claims != nil {
		claim = q.Claims.Claim(holder)
		defer claim.Release()
	}
	slot := q.SlotOf(holder)
	servers := slices.Clone(q.servers)
	rng.Shuffle(len(servers), func(i, j int) { servers[i], servers[j] = servers[j], servers[i] })
	minority := servers[:(len(servers)-1)/2]
	reached := servers[len(minority):]
	jumped := reached[rng.IntN(len(reached))]

	q.cut.Label, q.cut.Cluster = q.Name(), q.cluster
	g := Grudge{}
	g.cutAcross([]string{slot}, minority)
	if err := q.cut.apply(ctx, g); err != nil {
		return nil, err
	}
	q.log("%s: process %d in %s took the lock; %s cut off from %v, so the lock lives on the other %d servers only", q.Name(), holder, slot, slot, sorted(minority), len(reached))
	before := q.readAll(ctx, []string{jumped})
	jump := func() error { return q.move(ctx, q.Name(), []string{jumped}, before) }
	if claim != nil {
		if !claim.Await(ctx, 10*time.Second) {
			q.log("%s: process %d ended its hold without a write; the clock was not moved", q.Name(), holder)
			return nil, nil
		}
		q.takeover.MaxWait = q.MaxWait
		if err := q.takeover.whileStopped(ctx, holder, jump); err != nil {
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
