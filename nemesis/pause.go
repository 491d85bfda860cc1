package nemesis

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
)

func init() {
	Register(Kind{Name: "pause", Summary: "freeze a random client (its work and its lease keepalive) for the pause duration",
		Needs: Needs{CutsClient: true}, Duration: DurationOfPause,
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return &Pause{Label: "pause", Freezer: env.Freezer, Targets: env.Slots}, nil
		}})
	Register(Kind{Name: PauseHolderName, Summary: "freeze a lease holder between its last lease check and its write, past its lease",
		Needs: Needs{CutsClient: true}, Duration: DurationOfPause, AimsAtHolder: true,
		Flags: []usage.Flag{holdersAtOnceFlag, pauseUntilFlag}, Check: checkHoldersAtOnce,
		Build: func(_ context.Context, env *Env) (Fault, error) {
			ph := &PauseHolder{Freezer: env.Freezer, TargetOf: env.SlotOf, Claims: env.Claims,
				HoldersAtOnce: holdersAtOnce(env.Settings), UntilGranted: env.Settings.Options[pauseUntilFlag.Name] == PauseUntilGranted}
			env.Observe(ph.Observe)
			return ph, nil
		}})
	Register(Kind{Name: "pause-server", Summary: "freeze a random server node's container for the pause duration",
		Needs: Needs{Docker: true, Servers: 1}, Duration: DurationOfPause, Contended: ServerFreezeContended,
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return &Pause{Label: "pause-server", Freezer: env.Freezer, Targets: env.AllServers}, nil
		}})
	Register(Kind{Name: "pause-leader", Summary: "freeze the node the lock service says leads, for the pause duration",
		Needs: Needs{Docker: true, Servers: 1, Leader: true}, Duration: DurationOfPause, Contended: ServerFreezeContended,
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return &Pause{Label: "pause-leader", Freezer: env.Freezer, Targets: env.Leader}, nil
		}})
}

// ServerFreezeContended is why the faults that freeze servers go at most
// one run a core side by side. Whether a server's freeze exposes a lease
// holder turns on where the holders are in their sections when it lands;
// on this project's 2-core machine, three and four jepsen-etcd runs at
// once gave runs whose pauses exposed no holder at all, and a careful
// client's check and write drawn apart by the CPU, where one run a core
// gave neither (docs/benchmarks.md, "Runs side by side").
const ServerFreezeContended = "a server frozen under other runs' CPU load exposed no holder in runs where one run a core did"

// Pause freezes one target drawn at random — its work and its lease
// keepalive together — and thaws it on Stop.
type Pause struct {
	// Label is the fault's name: pause, pause-server, pause-leader...
	Label   string
	Freezer Freezer
	// Targets lists what may be frozen now.
	Targets func(ctx context.Context) ([]string, error)

	frozen frozenSet
}

func (p *Pause) Name() string { return p.Label }

func (p *Pause) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	t, err := drawTarget(ctx, p.Targets, rng)
	if t == "" {
		return nil, err
	}
	if err := p.frozen.freeze(ctx, p.Freezer, t); err != nil {
		return nil, err
	}
	return []string{t}, nil
}

func (p *Pause) Stop(ctx context.Context) error { return p.frozen.thawAll(ctx, p.Freezer) }

// drawTarget draws the one target a fault acts on, at random among what
// targets lists now. With nothing to act on (no leader known, say) it
// returns "" and no error: the fault then acts on nothing this time, which
// is not an error of the run.
func drawTarget(ctx context.Context, targets func(context.Context) ([]string, error), rng *rand.Rand) (string, error) {
	ts, err := targets(ctx)
	if err != nil || len(ts) == 0 {
		return "", err
	}
	return ts[rng.IntN(len(ts))], nil
}

// frozenSet remembers what a fault froze so that healing thaws exactly that.
type frozenSet struct {
	mu     sync.Mutex
	frozen []string
}

func (s *frozenSet) freeze(ctx context.Context, f Freezer, t string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Remember first: a freeze that errs half-way is still thawed.
	s.frozen = append(s.frozen, t)
	return f.Freeze(ctx, t)
}

func (s *frozenSet) thawAll(ctx context.Context, f Freezer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	left, err := healEach(s.frozen, inTurn, func(t string) error { return f.Thaw(ctx, t) })
	s.frozen = left
	return err
}

// PauseHolder is the targeted pause that makes a lease holder outlive its
// lease on purpose: it waits for a client to read under a lease, then
// freezes that client between its last lease check and its write, for
// longer than the lease, so that another client takes the lease over while
// the first still believes it holds it.
//
// "Between the check and the write" is a failpoint every recipe marks
// (lockclient.FailpointWriteChecked): the chosen process stops there, the
// fault freezes it, and the write leaves when it wakes — a GC pause or a
// frozen VM at the worst moment, placed exactly, as etcd's robustness
// tests place faults with gofail. Freezing a container takes the engine tens of milliseconds; a
// pause aimed at a moment without a failpoint would land before the check
// (which then sees the lease gone) or after the write, and prove nothing.
type PauseHolder struct {
	Freezer Freezer
	// TargetOf names the container or slot that runs a client process.
	TargetOf func(process int) string
	// Claims stops the chosen process at its failpoint.
	Claims *Claims
	// HoldersAtOnce is how many holders may be frozen at a time, each on
	// a key of its own, each lane with its own schedule (Lanes); 0 or 1
	// is one, as before there were lanes.
	HoldersAtOnce int
	// UntilGranted ends a freeze once another process has read under the
	// lock of the frozen holder's key (its grant seen, and its read that
	// shows the storage the newer token), plus GrantedMargin, at most the
	// fault's duration (--pause-until granted).
	UntilGranted bool

	aim    holderAim
	once   sync.Once
	frozen frozenSet

	// With several holders at once: the lanes share a group, which hands
	// each ok read to one armed lane whose key no other lane is on.
	group *holderGroup
	lane  int
	lanes []*PauseHolder

	taken successorWait
}

// PauseHolderName is pause-holder's --nemesis word, for the presets that
// run its schedule (harness.CIBound).
const PauseHolderName = "pause-holder"

func (p *PauseHolder) Name() string { return PauseHolderName }

func (p *PauseHolder) init() {
	p.once.Do(func() {
		p.aim.Claims = p.Claims
		if p.HoldersAtOnce > 1 && p.group == nil && p.lane == 0 {
			p.group = newHolderGroup(p.Claims, p.HoldersAtOnce)
			p.lanes = []*PauseHolder{p}
			for i := 1; i < p.HoldersAtOnce; i++ {
				l := &PauseHolder{Freezer: p.Freezer, TargetOf: p.TargetOf, Claims: p.Claims, HoldersAtOnce: p.HoldersAtOnce,
					UntilGranted: p.UntilGranted, group: p.group, lane: i}
				p.lanes = append(p.lanes, l)
			}
		}
	})
}

// Observe is a history observer (holderAim.Observe, or the group's with
// several holders at once); it never blocks.
func (p *PauseHolder) Observe(e history.Event) {
	p.init()
	if p.group == nil {
		p.taken.Observe(e)
		p.aim.Observe(e)
		return
	}
	for _, l := range p.lanes {
		l.taken.Observe(e)
	}
	p.group.Observe(e)
}

// Lanes are the further lanes of a PauseHolder with several holders at
// once (none with one): the schedule runs each on its own.
func (p *PauseHolder) Lanes() []Fault {
	p.init()
	if len(p.lanes) < 2 {
		return nil
	}
	out := make([]Fault, 0, len(p.lanes)-1)
	for _, l := range p.lanes[1:] {
		out = append(out, l)
	}
	return out
}

// Start freezes the next lease holder at its write failpoint, and returns
// nothing when ctx ends first.
func (p *PauseHolder) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	p.init()
	var target string
	act := func(pk aimPick) error {
		target = p.TargetOf(pk.process)
		if p.UntilGranted {
			p.taken.watch(pk.key, pk.process)
		}
		return p.frozen.freeze(ctx, p.Freezer, target)
	}
	var frozen bool
	var err error
	if p.group != nil {
		frozen, err = p.group.at(ctx, p.lane, act)
	} else {
		frozen, err = p.aim.atPick(ctx, act)
	}
	if !frozen {
		return nil, err
	}
	return []string{target}, nil
}

// Hold keeps the freeze for at most max: all of it by default, and with
// UntilGranted only until the frozen holder's successor has read under the
// lock, plus GrantedMargin.
func (p *PauseHolder) Hold(ctx context.Context, max time.Duration) {
	if !p.UntilGranted {
		sleep(ctx, max)
		return
	}
	p.taken.wait(ctx, max)
}

func (p *PauseHolder) Stop(ctx context.Context) error {
	p.taken.clear()
	err := p.frozen.thawAll(ctx, p.Freezer)
	if p.group != nil && err == nil {
		p.group.free(p.lane)
	}
	return err
}

// Claims lets a fault stop a client process at its next failpoint for as
// long as it takes to put the fault in place.
type Claims struct {
	mu     sync.Mutex
	claims map[int]*Claim
}

// Claim is one process held for a fault.
type Claim struct {
	reached, ended, released chan struct{}
	reach, end, release      sync.Once
}

// Claim marks process p: its next failpoint will stop and wait.
func (h *Claims) Claim(p int) *Claim {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.claims == nil {
		h.claims = map[int]*Claim{}
	}
	c := &Claim{reached: make(chan struct{}), ended: make(chan struct{}), released: make(chan struct{})}
	h.claims[p] = c
	return c
}

// Await returns true once the process stops at its failpoint, false when
// its section ends without one, ctx ends or max passes.
func (c *Claim) Await(ctx context.Context, max time.Duration) bool {
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-c.reached:
		return true
	case <-c.ended:
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// Release lets the process go on.
func (c *Claim) Release() { c.release.Do(func() { close(c.released) }) }

// Hook is the failpoint hook for process p's next op, nil when p is not
// claimed. At the failpoint it reports the process stopped and waits to be
// released (at most max, so a fault that dies cannot stall a client).
func (h *Claims) Hook(p int, max time.Duration) func(string) {
	h.mu.Lock()
	c := h.claims[p]
	h.mu.Unlock()
	if c == nil {
		return nil
	}
	return func(string) {
		c.reach.Do(func() { close(c.reached) })
		t := time.NewTimer(max)
		defer t.Stop()
		select {
		case <-c.released:
		case <-t.C:
		}
	}
}

// End says p's section is over: a claim it never reached is dropped.
func (h *Claims) End(p int) {
	h.mu.Lock()
	c := h.claims[p]
	delete(h.claims, p)
	h.mu.Unlock()
	if c != nil {
		c.end.Do(func() { close(c.ended) })
	}
}
