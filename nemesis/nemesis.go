// Package nemesis injects faults and heals them. A fault is one type
// implementing Fault, and each describes itself to the registry
// (registry.go) from its own file: its word, what it needs of the cluster,
// how long it holds and how it is built. The Schedule decides when faults
// start and stop and records each interval in the history. The nemesis
// never decides whether a history is correct, and it must heal everything
// it did — on time, on error and on interrupt alike.
package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
)

// Fault is one kind of fault.
type Fault interface {
	// Name is the --nemesis word for the fault and the f of its events.
	Name() string
	// Start applies the fault and returns what it hit (node or client
	// names). A fault that finds nothing to hit returns no targets and no
	// error; the schedule then tries again later.
	Start(ctx context.Context, rng *rand.Rand) (targets []string, err error)
	// Stop heals what the last Start did. It must be safe to call when
	// nothing is applied, and must not give up on a cancelled ctx lightly:
	// healing is the one thing the nemesis may never skip.
	Stop(ctx context.Context) error
}

// Announcer is a fault whose start must be in the history before it
// acts, not after: a power cut, whose act (execs in the nodes) takes tens
// of milliseconds to seconds, and a grant acknowledged in that time and
// lost by it must lie inside the fault's interval, never before it.
// StartAnnounced is Start with announce, which the fault calls once,
// right before it acts, with its targets: the schedule records the
// fault's invoke there. A fault that returns without announcing is
// recorded as one that found nothing to hit, or failed.
type Announcer interface {
	Fault
	StartAnnounced(ctx context.Context, rng *rand.Rand, announce func(targets []string)) (targets []string, err error)
}

// Freezer stops and resumes whole processes: the cgroup freezer for
// containers, a gate for in-process clients.
type Freezer interface {
	Freeze(ctx context.Context, target string) error
	Thaw(ctx context.Context, target string) error
}

// Recorder is where the schedule writes fault events.
type Recorder interface {
	Record(history.Event) history.Event
}

// Laned is a fault that can be in effect on several targets at once, as
// pause-holder with --holders-at-once: the fault itself is the first lane,
// and Lanes are the others. The schedule runs each further lane on its
// own, with its own rng: its own start, duration, heal and rest.
type Laned interface {
	Lanes() []Fault
}

// Holder is a fault that decides itself when, within its duration, its
// injection has done its work (pause-holder with --pause-until granted).
type Holder interface {
	// Hold returns when the fault may be healed: at most max from now, or
	// when ctx ends.
	Hold(ctx context.Context, max time.Duration)
}

// Schedule runs faults Jepsen-style: a quiet warm-up, then start a fault,
// leave it applied for its duration, heal it, rest, and so on, with
// jitter drawn from one seeded rng.
type Schedule struct {
	Faults   []Fault
	Warmup   time.Duration
	Interval time.Duration // time between a heal and the next start
	// FaultDuration is how long a fault stays applied (a pause's
	// duration).
	FaultDuration func(Fault) time.Duration
	Rng           *rand.Rand
	// LaneRng is the rng of a Laned fault's further lane (1, 2, …); the
	// first lane draws from Rng with every other fault, as without lanes.
	LaneRng func(lane int) *rand.Rand
	Rec     Recorder
	// Log gets a line per fault started or healed; may be nil.
	Log func(format string, args ...any)

	mu     sync.Mutex
	active map[string]activeFault
}

type activeFault struct {
	name    string
	targets []string
}

// Active lists the faults in effect now, for live progress.
func (s *Schedule) Active() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, a := range s.active {
		if len(a.targets) == 0 {
			out = append(out, a.name)
			continue
		}
		out = append(out, fmt.Sprintf("%s on %s", a.name, words.List(a.targets)))
	}
	sort.Strings(out)
	return out
}

func (s *Schedule) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}

func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	// ±25%
	return d*3/4 + time.Duration(rng.Int64N(int64(d)/2+1))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// lanes are the further lanes of the schedule's Laned faults.
func (s *Schedule) lanes() []Fault {
	var out []Fault
	for _, f := range s.Faults {
		if l, ok := f.(Laned); ok {
			out = append(out, l.Lanes()...)
		}
	}
	return out
}

// Run applies faults until ctx ends, then heals whatever is applied (with a
// context of its own, so an interrupt still heals) and returns the first
// healing error. A Laned fault's further lanes run beside, each on its
// own; the first lane to fail to heal ends them all.
func (s *Schedule) Run(ctx context.Context) error {
	s.mu.Lock()
	s.active = map[string]activeFault{}
	s.mu.Unlock()
	if len(s.Faults) == 0 {
		<-ctx.Done()
		return nil
	}
	lanes := s.lanes()
	if len(lanes) == 0 {
		return s.loop(ctx, s.Faults, s.Rng, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(lanes)+1)
	var wg sync.WaitGroup
	for i, f := range lanes {
		rng := rand.New(rand.NewPCG(uint64(i+1), 0xfe11ce))
		if s.LaneRng != nil {
			rng = s.LaneRng(i + 1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.loop(ctx, []Fault{f}, rng, i+1); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	if err := s.loop(ctx, s.Faults, s.Rng, 0); err != nil {
		errs <- err
		cancel()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// loop is one lane of the schedule: it applies faults drawn from faults
// with rng until ctx ends.
func (s *Schedule) loop(ctx context.Context, faults []Fault, rng *rand.Rand, lane int) error {
	if !sleep(ctx, s.Warmup) {
		return nil
	}
	slot := fmt.Sprint(lane)
	for i := 0; ctx.Err() == nil; i++ {
		f := faults[rng.IntN(len(faults))]
		var targets, announced []string
		var err error
		if a, ok := f.(Announcer); ok {
			targets, err = a.StartAnnounced(ctx, rng, func(ts []string) {
				if announced != nil {
					return
				}
				announced = ts
				s.begin(f, ts, slot)
			})
		} else {
			targets, err = f.Start(ctx, rng)
		}
		if announced != nil && len(targets) == 0 && err == nil {
			err = fmt.Errorf("%s announced %s and then hit nothing", f.Name(), words.List(announced))
		}
		if err != nil || len(targets) == 0 {
			msg := history.NothingToHit
			if err != nil {
				msg = err.Error()
			}
			// The start failed or found nothing: heal defensively and
			// record a lone info saying why.
			herr := s.heal(f)
			if herr != nil {
				msg += "; heal: " + herr.Error()
			}
			if ctx.Err() == nil || err != nil {
				// An announced start ends here: its interval is closed.
				s.Rec.Record(history.Event{Process: history.NemesisProcess, Type: history.Info, F: f.Name(), Nodes: announced, Error: msg})
			}
			if announced != nil {
				s.mu.Lock()
				delete(s.active, f.Name()+"#"+slot)
				s.mu.Unlock()
			}
			if err != nil {
				s.logf("nemesis: %s failed: %v", f.Name(), err)
			}
			if !sleep(ctx, jitter(rng, s.Interval)/4+10*time.Millisecond) {
				return nil
			}
			continue
		}
		if announced == nil {
			// The fault is in effect from here: its interval starts now.
			s.begin(f, targets, slot)
		}
		lasts := s.Interval
		if s.FaultDuration != nil {
			lasts = s.FaultDuration(f)
		}
		if h, ok := f.(Holder); ok {
			h.Hold(ctx, jitter(rng, lasts))
		} else {
			sleep(ctx, jitter(rng, lasts))
		}
		err = s.heal(f)
		ev := history.Event{Process: history.NemesisProcess, Type: history.Info, F: f.Name(), Nodes: targets}
		if err != nil {
			ev.Error = "heal: " + err.Error()
		}
		s.Rec.Record(ev)
		s.mu.Lock()
		delete(s.active, f.Name()+"#"+slot)
		s.mu.Unlock()
		s.logf("nemesis: healed %s %s", f.Name(), strings.Join(targets, ","))
		if err != nil {
			return fmt.Errorf("healing %s on %s: %w", f.Name(), words.List(targets), err)
		}
		if !sleep(ctx, jitter(rng, s.Interval)) {
			return nil
		}
	}
	return nil
}

// begin records f's start on targets: its interval starts now.
func (s *Schedule) begin(f Fault, targets []string, slot string) {
	s.Rec.Record(history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: f.Name(), Nodes: targets})
	s.mu.Lock()
	s.active[f.Name()+"#"+slot] = activeFault{f.Name(), targets}
	s.mu.Unlock()
	s.logf("nemesis: %s %s", f.Name(), strings.Join(targets, ","))
}

// heal stops f with a fresh, bounded context: it runs after an interrupt too.
func (s *Schedule) heal(f Fault) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return f.Stop(ctx)
}

// HealAll stops every fault; the harness calls it at the end of every run,
// whatever happened, as Jepsen's final generator does.
func HealAll(faults []Fault) error {
	var errs []string
	var all []Fault
	for _, f := range faults {
		all = append(all, f)
		if l, ok := f.(Laned); ok {
			all = append(all, l.Lanes()...)
		}
	}
	for _, f := range all {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := f.Stop(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", f.Name(), err))
		}
		cancel()
	}
	if len(errs) > 0 {
		return fmt.Errorf("could not heal %s", strings.Join(errs, "; "))
	}
	return nil
}
