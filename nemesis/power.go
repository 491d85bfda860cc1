package nemesis

// The power faults: a crash that loses what the lock service never
// fsynced. A kill leaves every write in the kernel's page cache, so a
// grant the service acknowledged without fsyncing survives it; a power
// cut does not. These faults SIGKILL a node's lock server and then drop
// what its data directory had not synced, as Jepsen does with lazyfs
// (kill first, then clear the cache), and start the server again on heal
// — Kill's restart, reused.
//
// How: Prepare lays a filesystem layer (nemesis/lossyfs, `check lossyfs
// serve`) over the backend's data directory (registry.Info.DataDir,
// Settings.DataDir) in every server node before the servers first start.
// The layer keeps written data in its own cache until a file is fsynced.
// Its process lives in a container of its own beside the node
// (engine.StartFSLayer), in the node's mount namespace but outside the
// node's cgroup, so a pause of the node (cgroup freezer) can never freeze
// the daemon its servers' file operations wait on. A fault's drop is an
// exec of `check lossyfs drop` in the node, once every process that held
// a file in the data directory is gone. Only runs that name a power
// fault get the layer: every other run is as it was.

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/nemesis/lossyfs"
)

func init() {
	Register(Kind{Name: "power-loss", Summary: "cut a random server node's power: SIGKILL its lock server, lose what its data directory never fsynced, start it again on heal",
		Needs: Needs{Docker: true, Servers: 1}, Check: checkPower, Prepare: preparePower,
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return newPowerLoss("power-loss", env, env.AllServers, false), nil
		}})
	Register(Kind{Name: "power-loss-leader", Summary: "cut the leading server node's power: SIGKILL its lock server, lose what it never fsynced, start it again on heal",
		Needs: Needs{Docker: true, Servers: 1, Leader: true}, Check: checkPower, Prepare: preparePower,
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return newPowerLoss("power-loss-leader", env, env.Leader, false), nil
		}})
	Register(Kind{Name: "power-loss-all", Summary: "cut every server node's power at once (a data centre's outage): SIGKILL every lock server, lose what each never fsynced, start them again on heal",
		Needs: Needs{Docker: true, Servers: 1}, Check: checkPower, Prepare: preparePower,
		Build: func(_ context.Context, env *Env) (Fault, error) {
			return newPowerLoss("power-loss-all", env, env.AllServers, true), nil
		}})
}

// PowerFaults are the faults that lay the filesystem layer (preparePower).
var PowerFaults = []string{"power-loss", "power-loss-leader", "power-loss-all"}

// CutsPower reports whether names include a power fault: the run gets
// the filesystem layer from its Prepare step.
func CutsPower(names []string) bool {
	for _, n := range names {
		if slices.Contains(PowerFaults, n) {
			return true
		}
	}
	return false
}

// LayPowerLayer lays the power faults' filesystem layer over the data
// directory in every server node, as their Prepare step does, for a run
// that asks for the layer with no power fault (--power-layer): nothing is
// ever dropped, the servers only run on it. It is how the layer's own
// cost is measured.
func LayPowerLayer(ctx context.Context, env *Env) error {
	if err := checkPower(env.Settings); err != nil {
		return err
	}
	return preparePower(ctx, env)
}

// checkPower refuses a backend whose servers keep nothing on a disk in
// their nodes: there is nothing for a power cut to lose beyond a kill.
func checkPower(s Settings) error {
	if s.DataDir == "" {
		return fmt.Errorf("backend %s's servers keep nothing on a disk in their nodes, so a power cut would lose nothing a kill does not: use kill, or a backend with a data directory (etcd, zookeeper, postgres, redis, nats)", s.Backend)
	}
	return nil
}

// DiskDir is where the layer keeps a data directory's synced content in
// the node: beside it.
func DiskDir(dataDir string) string { return path.Clean(dataDir) + ".disk" }

// preparePower lays the filesystem layer over the data directory in every
// server node.
func preparePower(ctx context.Context, env *Env) error {
	dir := env.Settings.DataDir
	cmd := []string{engine.BinaryPath, "lossyfs", "serve", dir, DiskDir(dir)}
	ready := []string{engine.BinaryPath, "lossyfs", "status"}
	return eachNode(env.ServerNodes, func(n string) error {
		if err := env.Cluster.StartFSLayer(ctx, n, cmd, ready, 30*time.Second); err != nil {
			return err
		}
		env.logf("power: %s's %s is on the filesystem layer (what is not fsynced is lost on a power fault)", n, dir)
		return nil
	})
}

func newPowerLoss(label string, env *Env, targets func(context.Context) ([]string, error), all bool) *PowerLoss {
	p := &powerCut{cluster: env.Cluster, dir: env.Settings.DataDir, log: env.logf, label: label}
	f := newPowerLossFault(&Kill{Label: label, Cluster: env.Cluster, DB: env.DB, Targets: targets, All: all, AfterKill: p.drop})
	p.dropped = f.dropped
	return f
}

// powerCut is what a power fault does in a node once its server is
// killed.
type powerCut struct {
	cluster *engine.Cluster
	dir     string
	label   string
	log     func(format string, args ...any)
	// dropped hears what each node's drop forgot (PowerLoss keeps it).
	dropped func(files int, bytes int64)
}

// drop waits until no process holds a file in the data directory (the
// killed server, and any process of it that outlived its kill: a power
// cut stops them all, so they are SIGKILLed too), then has the layer
// forget what was never synced.
func (p *powerCut) drop(ctx context.Context, node string) error {
	// A process still holding a file there could write into the cache
	// after the drop: power cuts do not leave stragglers.
	// One exec, one find per round: a loop of readlinks forks per
	// descriptor, seconds on a loaded machine, and the history must not
	// place the fault's start long after the kill.
	cut := fmt.Sprintf(`dir=%s
holders() { find /proc/[0-9]*/fd -maxdepth 1 \( -lname "$dir" -o -lname "$dir/*" \) 2>/dev/null | cut -d/ -f3 | sort -u; }
for i in $(seq 200); do
  h=$(holders)
  if [ -z "$h" ]; then exec %s lossyfs drop; fi
  kill -9 $h 2>/dev/null
  sleep 0.025
done
echo "processes still hold files in $dir after 5 s: $(holders | tr '\n' ' ')"; exit 1`, shellQuote(p.dir), shellQuote(engine.BinaryPath))
	out, err := script(ctx, p.cluster, node, cut)
	if err != nil {
		return fmt.Errorf("dropping what %s never synced: %w", node, err)
	}
	var a lossyfs.Answer
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &a); err != nil || a.Dropped == nil {
		return fmt.Errorf("dropping what %s never synced: the layer answered %q", node, strings.TrimSpace(out))
	}
	p.log("%s: %s lost what it never synced: %d files, %d KiB of pages", p.label, node, a.Dropped.Files, a.Dropped.Bytes/1024)
	if p.dropped != nil {
		p.dropped(a.Dropped.Files, a.Dropped.Bytes)
	}
	return nil
}
