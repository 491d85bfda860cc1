package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/nemesis"
)

// inProcessFaults are the faults an in-process run can inject: it has no
// containers, servers or network to break.
var inProcessFaults = []string{"pause", "pause-holder"}

// partitionShapes maps the partition words to the shapes each picks from.
var partitionShapes = map[string][]nemesis.Shape{
	"partition":                nemesis.ServerShapes,
	"partition-one":            {nemesis.IsolateOne},
	"partition-halves":         {nemesis.Halves},
	"partition-ring":           {nemesis.Ring},
	"partition-bridge":         {nemesis.Bridge},
	"partition-primary":        {nemesis.IsolatePrimary},
	"partition-client":         {nemesis.ClientFromServers},
	"partition-client-storage": {nemesis.ClientFromStorage},
}

// The latency fault's delay: Jepsen's default of 50 ms with jitter, and a
// little loss.
var latencyDelayer = nemesis.Delayer{Queue: 7, Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.02}

// holdFor is how long each fault stays applied: pauses for the pause
// duration (by default twice the lease, so that it expires), the other
// faults for the nemesis interval but never shorter than a pause, so that a
// partition or a kill also outlasts a lease.
func holdFor(cfg *Config) func(nemesis.Fault) time.Duration {
	return func(f nemesis.Fault) time.Duration {
		if f.Name() == "pause" || strings.HasPrefix(f.Name(), "pause-") {
			return cfg.PauseDuration
		}
		return max(cfg.NemesisInterval, cfg.PauseDuration)
	}
}

// buildFaults turns --nemesis into faults over sys.
func buildFaults(cfg *Config, sys System, rec *history.Recorder, hold *nemesis.Hold) ([]nemesis.Fault, error) {
	var out []nemesis.Fault
	slots := func(context.Context) ([]string, error) {
		var ts []string
		for i := 1; i <= cfg.Clients; i++ {
			ts = append(ts, history.SlotName(i))
		}
		return ts, nil
	}
	slotOf := func(p int) string { return history.SlotOf(p, cfg.Clients) }
	var holders *nemesis.Holders
	holder := func() *nemesis.Holders {
		if holders == nil {
			holders = &nemesis.Holders{SlotOf: slotOf}
			rec.Observe(holders.Observe)
		}
		return holders
	}
	ds, inDocker := sys.(*dockerSystem)
	for _, f := range cfg.Nemesis {
		switch f {
		case "none":
		case "pause":
			out = append(out, &nemesis.Pause{Label: "pause", Freezer: sys.Freezer(), Targets: slots})
		case "pause-holder":
			ph := &nemesis.PauseHolder{Freezer: sys.Freezer(), TargetOf: slotOf, Hold: hold}
			rec.Observe(ph.Observe)
			out = append(out, ph)
		default:
			if !inDocker {
				return nil, unavailable(cfg, f, false, 0)
			}
			fault, err := ds.fault(f, holder)
			if err != nil {
				return nil, err
			}
			out = append(out, fault)
		}
	}
	return out, nil
}

// fault builds one of the faults only a Docker cluster has.
func (s *dockerSystem) fault(word string, holders func() *nemesis.Holders) (nemesis.Fault, error) {
	var servers []string
	for _, n := range s.cluster.Nodes {
		if n.Role == compose.RoleServer {
			servers = append(servers, n.Name)
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("fault %s: the cluster has no server nodes", word)
	}
	all := func(context.Context) ([]string, error) { return servers, nil }
	leader := func(ctx context.Context) ([]string, error) {
		p, err := s.db.Primary(ctx, s.cluster)
		if err != nil || p == "" {
			return nil, err
		}
		return []string{p}, nil
	}
	primary := func(ctx context.Context) (string, error) { return s.db.Primary(ctx, s.cluster) }

	if shapes, ok := partitionShapes[word]; ok {
		if err := unavailable(s.cfg, word, true, len(servers)); err != nil {
			return nil, err
		}
		shapes = possibleShapes(shapes, len(servers))
		return &nemesis.Partition{Label: word, Cluster: s.cluster, Shapes: shapes, Servers: servers, Storage: compose.StorageNode,
			Primary: primary, Holder: func(ctx context.Context) string { return holders().Wait(ctx) }}, nil
	}
	switch word {
	case "pause-server":
		return &nemesis.Pause{Label: word, Freezer: s.Freezer(), Targets: all}, nil
	case "pause-leader":
		return &nemesis.Pause{Label: word, Freezer: s.Freezer(), Targets: leader}, nil
	case "kill":
		return &nemesis.Kill{Label: word, Cluster: s.cluster, DB: s.db, Targets: all}, nil
	case "kill-leader":
		return &nemesis.Kill{Label: word, Cluster: s.cluster, DB: s.db, Targets: leader}, nil
	case "latency":
		l := &nemesis.Latency{Cluster: s.cluster, Targets: all, Delayer: latencyDelayer, Command: []string{compose.BinaryPath, "delay"}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Probe(ctx, servers[0]); err != nil {
			hint := ""
			if strings.Contains(err.Error(), "does not run") {
				hint = " (the check binary needs a `delay` command that calls nemesis.RunDelayer)"
			}
			return nil, usage("nemesis", "latency: %v%s", err, hint)
		}
		return l, nil
	}
	return nil, usage("nemesis", "fault %s is not available for backend %s", word, s.cfg.Backend)
}

// unavailable says why fault word cannot be injected into a cluster of
// this kind (docker or in process) with this many lock servers, or nil
// when it can. Validate asks it before anything is created; buildFaults
// asks it again of the cluster that was set up.
func unavailable(cfg *Config, word string, docker bool, servers int) error {
	switch word {
	case "none", "pause", "pause-holder":
		return nil
	}
	if !docker {
		return usage("nemesis", "fault %s needs the servers and network of --cluster docker; an in-process run accepts only %s",
			word, strings.Join(inProcessFaults, ", "))
	}
	if shapes, ok := partitionShapes[word]; ok && len(possibleShapes(shapes, servers)) == 0 {
		return usage("nemesis", "%s cuts the lock service's servers apart, and backend %s runs on %d server node(s) here: nothing to cut (partition-client and partition-client-storage work here)",
			word, cfg.Backend, servers)
	}
	return nil
}

// InProcessFaults are the faults an in-process run can inject.
func InProcessFaults() []string { return slices.Clone(inProcessFaults) }

// CheckFaults asks, as Validate does before anything is created, whether
// the cluster cfg describes can inject every fault of its --nemesis: nil
// when it can (or when the backend is unknown, which Validate refuses),
// else a *UsageError saying why not.
func CheckFaults(cfg Config) error {
	cfg.Defaults()
	b, ok := backendInfo(cfg.Backend)
	if !ok {
		return nil
	}
	return cfg.checkFaults(b)
}

// checkFaults asks of every fault in --nemesis whether the cluster the
// config describes can inject it, as buildFaults will.
func (c *Config) checkFaults(b registry.Info) error {
	docker := c.Cluster == "docker"
	servers := 0
	if docker {
		_, n, err := b.NewDB(c.setup(""))
		if err != nil {
			return err
		}
		servers = n
	}
	for _, f := range c.Nemesis {
		if err := unavailable(c, f, docker, servers); err != nil {
			return err
		}
	}
	return nil
}

// possibleShapes keeps the shapes that cut something among n servers.
func possibleShapes(shapes []nemesis.Shape, n int) []nemesis.Shape {
	return slices.DeleteFunc(slices.Clone(shapes), func(s nemesis.Shape) bool {
		switch s {
		case nemesis.ClientFromServers, nemesis.ClientFromStorage:
			return false
		case nemesis.Ring, nemesis.Bridge:
			return n < 3
		}
		return n < 2
	})
}
