package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/docker/docker/client"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/nemesis"
)

// Clusters keeps the Docker clusters of finished runs warm for the next
// run of the same process that needs the same containers (backend, server
// count, clients, node and client images, agent binary and programs), so a matrix or a
// --test-count pays for containers once, not per run.
//
// A kept cluster is never shared by two runs at once, and a run never
// inherits anything from the last one but its containers and network:
// before it is used again every process the last run started is killed
// and every directory runs write is emptied (engine.Cluster.Rewarm), and
// the servers and storage start from nothing as on a new cluster. A
// cluster whose run failed, was interrupted or did not heal is never
// kept; one that cannot be made clean is removed and the run starts a
// fresh one, saying so in its log. Runs whose faults must prepare the
// servers' start (the clock faults) always get their own cluster.
type Clusters struct {
	mu   sync.Mutex
	idle map[string][]*engine.Cluster
	// order is every idle cluster, the longest idle first.
	order []*engine.Cluster
	// most is how many idle clusters p keeps (0: any number): runs side
	// by side (--parallel) leave one cluster each, and a matrix that moves
	// on to another backend would otherwise keep every slot's cluster of
	// the last one up to the end, its memory with it.
	most int
	// closed: Close has run; a cluster given back after it is removed.
	closed bool
	// removing counts the evicted clusters still being removed in the
	// background (evict), and removeErrs is what their removals said;
	// Close waits for them and returns the errors.
	removing   sync.WaitGroup
	removeErrs []error
}

// NewClusters makes an empty set of warm clusters that keeps any number
// idle; Close removes what it holds at the end.
func NewClusters() *Clusters { return &Clusters{idle: map[string][]*engine.Cluster{}} }

// NewClustersUpTo is NewClusters keeping at most most clusters idle (one
// per slot of --parallel): a cluster given back beyond that makes the one
// idle longest go.
func NewClustersUpTo(most int) *Clusters {
	p := NewClusters()
	p.most = max(most, 1)
	return p
}

// Run is harness.Run with the cluster taken from p when one is warm, and
// given back to p after a clean run. --fresh-cluster (Config.FreshCluster)
// opts a run out. A nil p is Run itself.
func (p *Clusters) Run(sig Signals, cfg Config, progress io.Writer) (*RunResult, error) {
	if p == nil {
		return Run(sig, cfg, progress)
	}
	return runWith(sig, cfg, progress, &runState{clusters: p})
}

// RunTest is harness.RunTest with p's warm clusters, as Run. A nil p is
// RunTest itself.
func (p *Clusters) RunTest(sig Signals, t *Test, progress io.Writer) (*RunResult, error) {
	if p == nil {
		return RunTest(sig, t, progress)
	}
	return runTest(sig, t, progress, &runState{clusters: p})
}

// Close removes every cluster p holds. Call it once the last run is done,
// also after an interrupt. A nil p holds nothing.
func (p *Clusters) Close(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	idle := p.idle
	p.idle, p.order, p.closed = map[string][]*engine.Cluster{}, nil, true
	p.mu.Unlock()
	p.removing.Wait()
	p.mu.Lock()
	errs := p.removeErrs
	p.removeErrs = nil
	p.mu.Unlock()
	for _, list := range idle {
		for _, cl := range list {
			if err := cl.Down(ctx); err != nil {
				errs = append(errs, fmt.Errorf("removing warm cluster %s: %w (check cluster down --id %s)", cl.TestID, err, cl.TestID))
			}
		}
	}
	return errors.Join(errs...)
}

// take hands out a warm cluster for key, or nil.
func (p *Clusters) take(key string) *engine.Cluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[key]
	if len(list) == 0 {
		return nil
	}
	cl := list[len(list)-1]
	p.idle[key] = list[:len(list)-1]
	p.order = slices.DeleteFunc(p.order, func(c *engine.Cluster) bool { return c == cl })
	return cl
}

// give keeps cl for the next run of key; false when p is closed. Past
// p.most idle clusters, it hands back the one idle longest (of any key)
// for the caller to remove.
func (p *Clusters) give(key string, cl *engine.Cluster) (kept bool, evicted *engine.Cluster) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false, nil
	}
	p.idle[key] = append(p.idle[key], cl)
	p.order = append(p.order, cl)
	if p.most > 0 && len(p.order) > p.most {
		evicted = p.order[0]
		p.order = p.order[1:]
		for k, list := range p.idle {
			p.idle[k] = slices.DeleteFunc(list, func(c *engine.Cluster) bool { return c == evicted })
		}
	}
	return true, evicted
}

// evict removes a cluster give handed back, in the background: the run
// that gave its own cluster back need not wait the seconds a removal
// takes (1.4 to 11 s, 117 s over the 31 evictions of CI's tests on
// 2026-12-07), and the next run starts meanwhile. Close waits for every
// removal and returns what failed (the run that evicted it has ended by
// then, and its log with it).
func (p *Clusters) evict(cl *engine.Cluster) {
	p.removing.Add(1)
	go func() {
		defer p.removing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := cl.Down(ctx); err != nil {
			p.mu.Lock()
			p.removeErrs = append(p.removeErrs, fmt.Errorf("removing evicted cluster %s: %w (check cluster down --id %s)", cl.TestID, err, cl.TestID))
			p.mu.Unlock()
		}
	}()
}

// warmKey is what a run needs of a kept cluster: the same containers.
// Everything else (recipe, version, lease, storage, fencing) the servers'
// fresh start sets. "" means the run takes no warm cluster and gives none.
func warmKey(cfg *Config, st *runState, spec engine.Spec) string {
	if st.clusters == nil || cfg.FreshCluster || cfg.KeepCluster || nemesis.Prepares(cfg.Nemesis) || cfg.PowerLayer || cfg.ServerImage != "" {
		return ""
	}
	return fmt.Sprintf("%s|%d servers|%d clients|%s|%s|%s|%s", cfg.Backend, spec.Servers, spec.Clients, spec.Image, spec.ClientImage, spec.Binary, engine.ProgramsSum(spec.Programs))
}

// upCluster brings spec's cluster up: a warm one made clean when the
// run's state holds one for key, else a new one.
func (s systemSetup) upCluster(ctx context.Context, cli *client.Client, spec engine.Spec, key string) (*engine.Cluster, error) {
	st, logf := s.st, s.logf
	if key != "" {
		if cl := st.clusters.take(key); cl != nil {
			t := time.Now()
			err := cl.Rewarm(ctx, registry.RunDirs())
			if err == nil {
				cli.Close()
				st.reused = true
				logf("cluster %s reused warm: the last run's processes killed and its data removed in %s (--fresh-cluster: a new cluster)",
					cl.TestID, time.Since(t).Round(time.Millisecond))
				return cl, nil
			}
			logf("cluster %s could not be made clean for reuse (%v); removing it and starting a fresh one", cl.TestID, err)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			if derr := cl.Down(dctx); derr != nil {
				logf("removing cluster %s: %v", cl.TestID, derr)
			}
			cancel()
		}
	}
	return engine.Up(ctx, cli, spec)
}
