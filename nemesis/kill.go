package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

func init() {
	Register(Kind{Name: "kill", Summary: "SIGKILL a random server node's lock server, start it again with its data on heal",
		Needs: Needs{Docker: true, Servers: 1},
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return &Kill{Label: "kill", Cluster: env.Cluster, DB: env.DB, Targets: env.AllServers}, nil
		}})
	Register(Kind{Name: "kill-leader", Summary: "SIGKILL the leading node's lock server, start it again on heal",
		Needs: Needs{Docker: true, Servers: 1, Leader: true},
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return &Kill{Label: "kill-leader", Cluster: env.Cluster, DB: env.DB, Targets: env.Leader}, nil
		}})
}

// Servers is what the kill faults need of a lock service's servers (a
// backends.DB has it): SIGKILL one node's server, start it again with its
// data.
type Servers interface {
	Kill(ctx context.Context, c nodes.Nodes, node string) error
	Start(ctx context.Context, c nodes.Nodes, node string) error
}

// Kill SIGKILLs the lock service's server on one node drawn at random and
// starts it again, with the data on the container's disk, on Stop. (The
// power faults, PowerCut, reuse its Stop.)
type Kill struct {
	// Label is the --nemesis word: kill, kill-leader.
	Label   string
	Cluster nodes.Nodes
	DB      Servers
	// Targets lists the nodes whose server may be killed now (the server
	// nodes; the leader alone for kill-leader).
	Targets func(ctx context.Context) ([]string, error)

	mu     sync.Mutex
	killed []string
}

func (k *Kill) Name() string { return k.Label }

func (k *Kill) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	t, err := drawTarget(ctx, k.Targets, rng)
	if t == "" {
		return nil, err
	}
	ts := []string{t}
	// The kill runs to its end even on an interrupt: Docker cannot stop an
	// exec half-way, so a cancelled kill would leave us not knowing.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = eachNode(ts, func(n string) error {
		if err := k.DB.Kill(kctx, k.Cluster, n); err != nil {
			return fmt.Errorf("%s: killing the server in %s: %w", k.Label, n, err)
		}
		k.mu.Lock()
		k.killed = appendOnce(k.killed, n)
		k.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ts, nil
}

// Stop starts every killed server again, retrying while its node refuses
// exec (it is paused). Servers it could not start stay on its list.
func (k *Kill) Stop(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	left, err := healEach(k.killed, inTurn, func(n string) error {
		if err := k.restart(ctx, n); err != nil {
			return fmt.Errorf("%s: restarting the server in %s: %w", k.Label, n, err)
		}
		return nil
	})
	k.killed = left
	return err
}

func (k *Kill) restart(ctx context.Context, node string) error {
	deadline := time.Now().Add(healPatience)
	for {
		err := k.DB.Start(ctx, k.Cluster, node)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}
