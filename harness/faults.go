package harness

import (
	"context"
	"errors"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// The faults are nemesis's: each describes itself in nemesis's registry
// (what it needs, how long it holds, how it is built). The harness asks
// the registry and names no fault.

// faultSettings is what the faults are told about this run: on a Docker
// cluster with this many server nodes, or in process.
func (c *Config) faultSettings(docker bool, servers int) nemesis.Settings {
	b, _ := registry.Lookup(c.Backend)
	return nemesis.Settings{Backend: c.Backend, NoClockFaults: b.NoClockFaults, Docker: docker, Servers: servers, Clients: c.Clients,
		LeaseTTL: c.LeaseTTL, PauseDuration: c.PauseDuration, Interval: c.NemesisInterval, Options: c.Options}
}

// faultEnv is what the faults of a run are built from over sys. The
// recorder's parts (Claims, Observe) are the caller's to fill.
func faultEnv(cfg *Config, sys System) *nemesis.Env {
	env := &nemesis.Env{Settings: cfg.faultSettings(false, 0), Freezer: sys.Freezer()}
	if ds, ok := sys.(*dockerSystem); ok {
		ds.describeTo(env)
	}
	return env
}

// describeTo fills in what the faults need of the Docker cluster.
func (s *dockerSystem) describeTo(env *nemesis.Env) {
	var servers []string
	for _, n := range s.cluster.Nodes {
		if n.Role == engine.RoleServer {
			servers = append(servers, n.Name)
		}
	}
	env.Settings = s.cfg.faultSettings(true, len(servers))
	env.Cluster, env.ServerNodes, env.Storage, env.DB = s.cluster, servers, engine.StorageNode, s.db
	env.Log = s.logf
}

// buildFaults turns --nemesis into faults over sys.
func buildFaults(cfg *Config, sys System, rec *history.Recorder, claims *nemesis.Claims) ([]nemesis.Fault, nemesis.Settings, error) {
	env := faultEnv(cfg, sys)
	env.Claims, env.Observe = claims, rec.Observe
	// The probes a fault makes run to their end: an interrupt comes back
	// to the caller once the faults are built.
	faults, err := nemesis.Build(context.Background(), cfg.Nemesis, env)
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

// CheckFaults asks, as Validate does before anything is created, whether
// the cluster cfg describes can inject every fault of its --nemesis: nil
// when it can (or when the backend is unknown, which Validate refuses),
// else a *usage.Error saying why not.
func CheckFaults(cfg Config) error {
	cfg.Defaults()
	b, ok := registry.Lookup(cfg.Backend)
	if !ok {
		return nil
	}
	return cfg.checkFaults(b)
}

// checkFaults asks the fault registry about --nemesis: the words, the
// faults' own flags, and whether the cluster the config describes can
// inject every fault, as buildFaults will.
func (c *Config) checkFaults(b registry.Info) error {
	if err := nemesis.CheckNames(c.Nemesis); err != nil {
		return usage.Errorf("nemesis", "%v", err)
	}
	docker := c.Cluster == registry.ClusterDocker
	servers := 0
	if docker {
		_, n, err := b.NewDB(c.setup(""))
		if err != nil {
			return err
		}
		servers = n
	}
	for _, f := range c.Nemesis {
		if err := nemesis.Check(f, c.faultSettings(docker, servers)); err != nil {
			return faultUsage(err)
		}
	}
	return faultUsage(nemesis.CheckFlags(c.Nemesis, c.Options))
}
