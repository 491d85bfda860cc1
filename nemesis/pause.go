package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"

	"github.com/fencecheck/fencecheck/history"
)

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
	ts, err := p.Targets(ctx)
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	t := ts[rng.IntN(len(ts))]
	if err := p.frozen.freeze(ctx, p.Freezer, t); err != nil {
		return nil, err
	}
	return []string{t}, nil
}

func (p *Pause) Stop(ctx context.Context) error { return p.frozen.thawAll(ctx, p.Freezer) }

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
	var errs []error
	var left []string
	for _, t := range s.frozen {
		if err := f.Thaw(ctx, t); err != nil {
			errs = append(errs, err)
			left = append(left, t)
		}
	}
	s.frozen = left
	return errors.Join(errs...)
}

// PauseHolder is the targeted pause that makes the seed's story happen on
// purpose: it waits for a client to read under a lease, then freezes that
// client — before its write — for longer than the lease, so that another
// client takes the lease over while the first still believes it holds it.
type PauseHolder struct {
	Freezer Freezer
	// TargetOf names the container or slot that runs a client process.
	TargetOf func(process int) string

	reads  chan string
	once   sync.Once
	frozen frozenSet
}

func (p *PauseHolder) Name() string { return "pause-holder" }

func (p *PauseHolder) init() { p.once.Do(func() { p.reads = make(chan string, 64) }) }

// Observe is a history observer: it notes every ok read, the moment a
// holder is between reading and writing. It never blocks.
func (p *PauseHolder) Observe(e history.Event) {
	p.init()
	if e.IsNemesis() || e.F != history.Read || e.Type != history.OK {
		return
	}
	select {
	case p.reads <- p.TargetOf(e.Process):
	default:
	}
}

func (p *PauseHolder) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	p.init()
	// Forget reads from before this fault: their writes are done.
	for len(p.reads) > 0 {
		<-p.reads
	}
	select {
	case <-ctx.Done():
		return nil, nil
	case t := <-p.reads:
		if err := p.frozen.freeze(ctx, p.Freezer, t); err != nil {
			return nil, err
		}
		return []string{t}, nil
	}
}

func (p *PauseHolder) Stop(ctx context.Context) error { return p.frozen.thawAll(ctx, p.Freezer) }
