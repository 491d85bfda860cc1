package harness

import (
	"context"
	"errors"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// The faults are nemesis's: each describes itself in nemesis's registry
// (what it needs, how long it holds, how it is built). The harness asks
// the registry and names no fault.

// faultEnv is what the faults of a run are built from over sys. The
// recorder's parts (Claims, Observe) are the caller's to fill.
func faultEnv(t *Test, sys System) *nemesis.Env {
	env := &nemesis.Env{Settings: t.faults, Freezer: sys.Freezer()}
	if ds, ok := sys.(*dockerSystem); ok {
		ds.describeTo(env)
	}
	if es, ok := sys.(*endpointsSystem); ok {
		es.describeTo(env)
	}
	return env
}

// describeTo fills in what the faults need of the Docker cluster.
func (s *dockerSystem) describeTo(env *nemesis.Env) {
	var servers []string
	for _, n := range s.nodes.All() {
		if n.Role == nodes.RoleServer {
			servers = append(servers, n.Name)
		}
	}
	env.Settings = s.t.faultSettings(true, len(servers))
	env.Cluster, env.ServerNodes, env.Storage, env.DB = s.nodes, servers, nodes.StorageNode, s.db
	env.Log = s.logf
}

// buildFaults turns --nemesis into faults over sys.
func buildFaults(t *Test, sys System, rec *history.Recorder, claims *nemesis.Claims) ([]nemesis.Fault, nemesis.Settings, error) {
	env := faultEnv(t, sys)
	env.Claims, env.Observe = claims, rec.Observe
	// The probes a fault makes run to their end: an interrupt comes back
	// to the caller once the faults are built.
	build := t.kinds.Build
	if es, ok := sys.(*endpointsSystem); ok {
		build = es.buildFaults
	}
	faults, err := build(context.Background(), env)
	return faults, env.Settings, faultUsage(err)
}

// faultUsage makes a fault the run cannot inject bad input for --nemesis
// (exit 254). A fault's own flag given wrongly is a *usage.Error already.
func faultUsage(err error) error {
	var un *nemesis.Unavailable
	if errors.As(err, &un) {
		return usage.Errorf("nemesis", "%s", un.Msg)
	}
	return err
}

// CheckFaults asks, as Resolve does before anything is created, whether
// the cluster cfg describes can inject every fault of its --nemesis: nil
// when it can (or when the backend is unknown, which Resolve refuses),
// else a *usage.Error saying why not. It asks nothing else of cfg, so a
// comparison can tell a cell no fault of its column fits from one that is
// wrong.
func CheckFaults(cfg Config) error {
	// The --client directory is not read: the faults' question needs
	// nothing of it.
	t := lookUp(cfg)
	if !t.known {
		return nil
	}
	t.cfg.defaults(t.info, t.known, nil)
	return t.checkFaults()
}

// checkFaults asks the fault registry about --nemesis: the words, the
// faults' own flags, and whether the cluster the test describes can
// inject every fault, as buildFaults will. It keeps what the faults are
// told (t.faults): on a Docker cluster, with the server count the backend
// says for it.
func (t *Test) checkFaults() error {
	c := &t.cfg
	kinds, err := nemesis.Resolve(c.Nemesis)
	if err != nil {
		return usage.Errorf("nemesis", "%v", err)
	}
	t.kinds = kinds
	if err := t.checkFailpointBuild(); err != nil {
		return err
	}
	docker := c.Cluster == registry.ClusterDocker
	servers := 0
	if docker {
		_, n, err := t.info.NewDB(t.setup(""))
		if err != nil {
			return err
		}
		servers = n
	}
	t.faults = t.faultSettings(docker, servers)
	if err := kinds.Check(t.faults); err != nil {
		return faultUsage(err)
	}
	return faultUsage(nemesis.CheckFlags(c.Nemesis, c.Options))
}

// FailoverEvent is the nemesis event's f for a leader the lock service
// replaced by itself (backends.LeaderWatcher): not a fault fencecheck
// injected, but shown beside them.
const FailoverEvent = "failover"

// watchLeader records, until stop is called, each leader change the lock
// service makes by itself: an invoke naming the old leader when a
// failover begins, an info naming the new one when it is named.
func watchLeader(sys System, rec *history.Recorder) (stop func()) {
	ds, ok := sys.(*dockerSystem)
	if !ok {
		return func() {}
	}
	w, ok := ds.db.(backends.LeaderWatcher)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.WatchLeader(ctx, ds.nodes, func(begun bool, node string) {
			ev := history.Event{Process: history.NemesisProcess, Type: history.Info, F: FailoverEvent}
			switch {
			case begun:
				ev.Type, ev.Nodes = history.Invoke, []string{node}
				ds.logf("the lock service began a failover of %s", node)
			case node != "":
				ev.Nodes = []string{node}
				ds.logf("the lock service promoted %s", node)
			default:
				ev.Error = "no new leader was named before the workload ended"
			}
			rec.Record(ev)
		})
	}()
	return func() { cancel(); <-done }
}
