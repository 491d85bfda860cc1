package nemesis

import (
	"context"
	"math/rand/v2"
	"sync"
)

// pause-all freezes every server of the lock service at once and thaws them
// together: the other half of the pauses in Jepsen's etcd lock test, which
// aimed each SIGSTOP either at the leader (pause-leader here) or at every
// node. While the whole cluster is frozen no lease can be renewed and no
// lock granted; when it thaws, every server's lease timers run on from
// where they stopped, and the leases whose holders' keepalives piled up
// unanswered expire together.
//
// Listed with pause-leader (--nemesis pause-leader,pause-all), the schedule
// draws one of the two for each injection, as Jepsen's nemesis drew its
// target.
func init() {
	Register(Kind{Name: "pause-all", Summary: "freeze every server node's container at once for the pause duration, then thaw them together",
		Needs: Needs{Docker: true, Servers: 1}, Duration: DurationOfPause, Contended: ServerFreezeContended,
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return &PauseAll{Freezer: env.Freezer, Targets: env.AllServers}, nil
		}})
}

// PauseAll freezes every target together and thaws them together on Stop.
type PauseAll struct {
	Freezer Freezer
	// Targets lists what is frozen: every server node.
	Targets func(ctx context.Context) ([]string, error)

	mu     sync.Mutex
	frozen []string
}

func (p *PauseAll) Name() string { return "pause-all" }

// Start freezes every target at once (one goroutine each, so that the
// engine's tens of milliseconds per freeze do not stagger them) and
// returns them all. A target that fails to freeze is still thawed by Stop.
func (p *PauseAll) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	ts, err := p.Targets(ctx)
	if err != nil || len(ts) == 0 {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = append(p.frozen, ts...)
	return ts, eachNode(ts, func(t string) error { return p.Freezer.Freeze(ctx, t) })
}

// Stop thaws every target together; one that will not thaw stays listed,
// so a later Stop tries it again.
func (p *PauseAll) Stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	left, err := healEach(p.frozen, eachNode, func(t string) error { return p.Freezer.Thaw(ctx, t) })
	p.frozen = left
	return err
}
