package harness

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/internal/meminfo"
	"github.com/fencecheck/fencecheck/internal/units"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/nemesis"
)

// SlotMemory is what one slot of --parallel is allowed of the engine's
// memory: one run's cluster at its largest, with room to spare. Measured
// with docker stats every 20 s on 2026-12-05 (docs/benchmarks.md, "Runs
// side by side"), the containers of one cluster peaked at most at 650 MiB
// (etcd: the jepsen-etcd preset's 5 nodes with 5 clients), 601 MiB
// (Kubernetes: 3 etcd and kube-apiserver), 376 MiB (ZooKeeper's three
// JVMs), 274 MiB (PostgreSQL) and 214 MiB (Redis), and later 135 MiB
// (NATS, 2026-12-06); 2 GiB leaves each slot
// room for a longer run's growth and the engine's own overhead.
const SlotMemory = 2 << 30

// MaxParallel bounds --parallel: past it the engine's bridge networks
// (one per cluster; Docker's default address pools hold about 30) and its
// event stream become the limit, not the machine.
const MaxParallel = 16

// RunsPerCore is how many runs the default puts on each of the engine's
// cores. A run spends most of its wall time waiting, but its faults are
// timing: a client starved of CPU between its lease check and its write
// is a pause nobody injected. Measured on this project's 2-core machine
// (docs/benchmarks.md), 2 runs at once gave the verdicts 1 gave, and 4
// did not — a run that no fault exposed, and the careful client's stale
// write admitted — so the default is one run a core.
const RunsPerCore = 1

// Width is a --parallel setting and why it is what it is.
type Width struct {
	// N is the number of slots; Most is the most the engine's memory
	// allows (N ≤ Most); CPUs is the engine's cores.
	N, Most, CPUs int
	// Why names the numbers the default was worked out from.
	Why string
}

// ParallelWidth works out --parallel's default and its upper bound from
// the engine's cores and memory: RunsPerCore runs a core, and never more
// slots than half the engine's memory holds at SlotMemory each (the other
// half is the checks' bound and the engine's own, DefaultCheckMemory).
func ParallelWidth(cpus int, memory int64) Width {
	cpus = max(cpus, 1)
	most := 1
	if memory > 0 {
		most = max(1, int(memory/2/SlotMemory))
	}
	most = min(most, MaxParallel)
	n := min(RunsPerCore*cpus, most)
	return Width{N: n, Most: most, CPUs: cpus, Why: fmt.Sprintf("%d cores × %d run(s) a core, %s of memory / 2 / %s a slot allows %d",
		cpus, RunsPerCore, units.FormatBytes(memory), units.FormatBytes(SlotMemory), most)}
}

// EngineWidth is ParallelWidth for the engine the runs will use: its
// cores and memory as it reports them (a remote engine is another
// machine), or this machine's when every run is in process or the engine
// cannot be asked (the runs will then say why themselves).
func EngineWidth(ctx context.Context, docker bool) Width {
	cpus, memory := runtime.NumCPU(), int64(0)
	if total, err := meminfo.Field("MemTotal"); err == nil {
		memory = total
	}
	if docker {
		if cli, err := engine.Connect(ctx); err == nil {
			if info, err := cli.Info(ctx); err == nil && info.NCPU > 0 && info.MemTotal > 0 {
				cpus, memory = info.NCPU, info.MemTotal
			}
			cli.Close()
		}
	}
	return ParallelWidth(cpus, memory)
}

// ContendedWidth is n, or the engine's cores when n is more and one of
// faults runs at most one a core side by side (nemesis.Kind.Contended),
// with a line saying so and why; "" when n stands. The limit is the
// tool's, not an error: a matrix asked to go wider than its faults can
// go faithfully runs at the width they can, and says so, rather than
// printing answers the machine's load gave.
func ContendedWidth(n int, w Width, faults []string) (int, string) {
	most := max(1, RunsPerCore*w.CPUs)
	names, why := nemesis.Contended(faults)
	if n <= most || len(names) == 0 {
		return n, ""
	}
	return most, fmt.Sprintf("--parallel %d lowered to %d, one run a core of the engine's %d: runs under %s go at most one a core side by side (%s)",
		n, most, w.CPUs, words.List(names), strings.Join(why, "; "))
}

// CheckParallel refuses a --parallel the engine cannot hold: below 1, or
// more slots than its memory allows (w.Most).
func CheckParallel(n int, w Width) error {
	if n < 1 || n > MaxParallel {
		return usage.Errorf("parallel", "%d is out of range (accepted: 1 to %d, and at most %d on this engine)", n, MaxParallel, w.Most)
	}
	if n > w.Most {
		return usage.Errorf("parallel", "%d slots would not fit the engine's memory: %s (at most %d here; each slot may take %s)", n, w.Why, w.Most, units.FormatBytes(SlotMemory))
	}
	return nil
}
