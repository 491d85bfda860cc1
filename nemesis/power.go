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
// (nodes.FSLayerer, compose/engine's StartFSLayer), in the node's mount
// namespace but outside the node's cgroup, so a pause of the node (cgroup
// freezer) can never freeze the daemon its servers' file operations wait
// on. A fault's cut is an
// exec of `check lossyfs cut` in the node (with `arm` and `wait` first
// for a cut at an instant or at a sync). Only runs that name a power
// fault get the layer: every other run is as it was.

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis/lossyfs"
)

func init() {
	for _, k := range []struct {
		name, summary string
		leader        bool
		servers       int
		pick          powerPick
	}{
		{"power-loss", "cut a random server node's power: SIGKILL its lock server, lose what its data directory never fsynced, start it again on heal", false, 1, pickOne},
		{"power-loss-leader", "cut the leading server node's power: SIGKILL its lock server, lose what it never fsynced, start it again on heal", true, 1, pickOne},
		{"power-loss-majority", "cut the power of a majority of the server nodes, not all (drawn each time): the same instant in each, lose what each never fsynced, start them again on heal", false, 3, pickMajority},
		{"power-loss-all", "cut every server node's power at one instant (a data centre's outage): SIGKILL every lock server, lose what each never fsynced, start them again on heal", false, 1, pickAll},
	} {
		Register(Kind{Name: k.name, Summary: k.summary, Flags: powerFlags,
			Needs: Needs{Docker: true, Servers: k.servers, Leader: k.leader}, Check: checkPower, Prepare: preparePower,
			Build: func(_ context.Context, env *Env) (Fault, error) {
				targets := env.AllServers
				if k.leader {
					targets = env.Leader
				}
				return newPowerCut(k.name, env, targets, k.pick)
			}})
	}
}

// The power faults' own flags (docs/power-loss.md).
var (
	powerAtFlag = usage.Flag{Name: "power-at", Usage: "when a power fault cuts: random (the schedule's moment, the default), grant (right after a lock grant is acknowledged, before the service's next sync of its log), before-sync:N or after-sync:N (the Nth sync of its log from the fault's start)",
		Check: func(v string) error { _, err := parsePowerAt(v); return err }}
	powerLogFlag = usage.Flag{Name: "power-log", Usage: "the files whose syncs --power-at counts: a glob matched against a file's path in the data directory and its base name (default: the backend's log, e.g. *.wal for etcd)",
		Check: func(v string) error {
			if _, err := path.Match(v, ""); err != nil {
				return fmt.Errorf("%q is no glob: %v", v, err)
			}
			return nil
		}}
	powerTornFlag = usage.Flag{Name: "power-torn", Usage: "what of the unsynced writes a power cut keeps: none (the default: every file back to its last sync), torn-op (the part of one write before a page boundary in it), torn-seq (a random subset of each file's unsynced writes); drawn from the run's seed",
		Check: func(v string) error { _, err := lossyfs.ParseTorn(v); return err }}
	powerSilentFlag = usage.Flag{Name: "power-silent", Usage: "true: a node's network drops before its server dies, so its peers and clients see silence, not a reset (as after a real power cut); false (the default): the kill resets its connections",
		Check: func(v string) error {
			if v != "" && v != "true" && v != "false" {
				return fmt.Errorf("%q: true or false", v)
			}
			return nil
		}}
	powerDirFlag = usage.Flag{Name: "power-dir-entries", Usage: "durable (the default, as lazyfs): creates, renames and unlinks in the data directory survive a power cut at once; need-fsync: those not followed by an fsync of their directory are lost",
		Check: func(v string) error {
			if v != "" && v != "durable" && v != "need-fsync" {
				return fmt.Errorf("%q: durable or need-fsync", v)
			}
			return nil
		}}
	powerFlags = []usage.Flag{powerAtFlag, powerLogFlag, powerTornFlag, powerSilentFlag, powerDirFlag}
)

// powerAt is when a power fault cuts (--power-at).
type powerAt struct {
	// grant: right after an acquire is acknowledged, before the next
	// sync of the log.
	grant bool
	// n > 0: before (after) the nth sync of the log.
	n     int
	after bool
}

func (a powerAt) aimed() bool { return a.grant || a.n > 0 }

func (a powerAt) String() string {
	switch {
	case a.grant:
		return "grant"
	case a.n > 0 && a.after:
		return fmt.Sprintf("after-sync:%d", a.n)
	case a.n > 0:
		return fmt.Sprintf("before-sync:%d", a.n)
	}
	return "random"
}

func parsePowerAt(v string) (powerAt, error) {
	switch v {
	case "", "random":
		return powerAt{}, nil
	case "grant":
		return powerAt{grant: true}, nil
	}
	timing, n, ok := strings.Cut(v, ":")
	if ok && (timing == "before-sync" || timing == "after-sync") {
		if k, err := strconv.Atoi(n); err == nil && k >= 1 {
			return powerAt{n: k, after: timing == "after-sync"}, nil
		}
	}
	return powerAt{}, fmt.Errorf("%q is no moment (accepted: random, grant, before-sync:N, after-sync:N with N 1 or more)", v)
}

// PowerFaults are the faults that lay the filesystem layer (preparePower).
var PowerFaults = []string{"power-loss", "power-loss-leader", "power-loss-majority", "power-loss-all"}

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

// LaysPowerLayer reports whether the faults names lists lay the power
// layer themselves with these options: a power fault, or the failpoint
// fault with --failpoint-crash power-loss.
func LaysPowerLayer(names []string, options map[string]string) bool {
	return CutsPower(names) || (slices.Contains(names, "failpoint") && options[failpointCrashFlag.Name] == FailpointPowerLoss)
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
// their nodes (there is nothing for a power cut to lose beyond a kill),
// and an aimed cut with no log to count the syncs of.
func checkPower(s Settings) error {
	if s.DataDir == "" {
		return fmt.Errorf("backend %s's servers keep nothing on a disk in their nodes, so a power cut would lose nothing a kill does not: use kill, or a backend with a data directory (etcd, zookeeper, postgres, redis, nats)", s.Backend)
	}
	at, err := parsePowerAt(s.Options["power-at"])
	if err != nil {
		return usage.Errorf("power-at", "%v", err)
	}
	if at.aimed() && s.Options["power-log"] == "" && s.DataLog == "" {
		return usage.Errorf("power-log", "--power-at %s counts the syncs of the service's log, and backend %s names none: give --power-log GLOB (its log files' names)", at, s.Backend)
	}
	return nil
}

// DiskDir is where the layer keeps a data directory's synced content in
// the node: beside it.
func DiskDir(dataDir string) string { return path.Clean(dataDir) + ".disk" }

// preparePower lays the filesystem layer over the data directory in every
// server node; with --power-torn, one that keeps its unsynced writes;
// with --power-dir-entries need-fsync, one that journals directory
// changes until their directory is fsynced.
func preparePower(ctx context.Context, env *Env) error {
	dir := env.Settings.DataDir
	cmd := []string{nodes.BinaryPath, "lossyfs", "serve", dir, DiskDir(dir)}
	if torn, _ := lossyfs.ParseTorn(env.Settings.Options["power-torn"]); torn != lossyfs.TornNone {
		cmd = append(cmd, "--keep-writes")
	}
	if env.Settings.Options["power-dir-entries"] == "need-fsync" {
		cmd = append(cmd, "--lose-names")
	}
	ready := []string{nodes.BinaryPath, "lossyfs", "status"}
	layers, ok := env.Cluster.(nodes.FSLayerer)
	if !ok {
		return fmt.Errorf("the power faults need Docker nodes: this driver cannot run the filesystem layer beside a node")
	}
	return eachNode(env.ServerNodes, func(n string) error {
		if err := layers.StartFSLayer(ctx, n, cmd, ready, 30*time.Second); err != nil {
			return err
		}
		env.logf("power: %s's %s is on the filesystem layer (what is not fsynced is lost on a power fault)", n, dir)
		return nil
	})
}
