package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/nemesis"
)

// layerSide is one side of the power-layer group: etcd without the layer,
// or with it, run by this build's check binary or by another (before: the
// layer as an earlier commit built it, to measure a change in one run).
type layerSide struct {
	name   string
	layer  bool
	binary string // "" for this build's
}

// powerLayerRows measures what the power faults' filesystem layer
// (nemesis/lossyfs) costs etcd: the same workload without the layer and
// with it (--power-layer: laid over etcd's data directory as a power
// fault's Prepare step lays it, nothing ever dropped), in rounds of one
// run per side, back to back (without, with, without, with, ...), so that
// the machine's load falls on every side alike. Each run is a new cluster
// (the layer takes no warm one). With before (a check binary of an
// earlier commit), each round also runs the layer as that binary has it.
// Then fsync latency in one node: 4 KiB O_DSYNC writes through the layer
// against the same writes to the disk below it, interleaved too.
func powerLayerRows(rounds int, timeLimit time.Duration, before string) []row {
	cfg := dockerEtcdConfig()
	cfg.Keys, cfg.TimeLimit = cfg.Clients, timeLimit // a key per client: etcd, not the lock's queue, sets the pace
	sides := []layerSide{{name: "without the layer"}}
	if before != "" {
		sides = append(sides, layerSide{name: "on the layer, before (" + before + ")", layer: true, binary: before})
	}
	sides = append(sides, layerSide{name: "on the layer (--power-layer)", layer: true})
	rates := make([][]float64, len(sides))
	acqs := make([][]float64, len(sides))
	for i := range rounds {
		for s, side := range sides {
			c := cfg
			c.PowerLayer, c.AgentBinary, c.Seed, c.Store = side.layer, side.binary, int64(3000+i), tempStore()
			out, err := harness.Run(quiet(), c, nil)
			os.RemoveAll(c.Store)
			if err != nil {
				return []row{failedRow(fmt.Sprintf("etcd %s, round %d", side.name, i+1), err)}
			}
			ok, acq := 0, 0
			for _, o := range out.Report.Ops {
				if o.Type == history.OK {
					ok++
					if o.F == history.Acquire {
						acq++
					}
				}
			}
			rates[s] = append(rates[s], float64(ok)/c.TimeLimit.Seconds())
			acqs[s] = append(acqs[s], float64(acq)/c.TimeLimit.Seconds())
			fmt.Fprintf(os.Stderr, "bench: power layer round %d, %s: %.1f ops/s\n", i+1, side.name, rates[s][i])
		}
	}
	name := fmt.Sprintf("etcd, 3 nodes, %d clients, %d keys, %s", cfg.Clients, cfg.Keys, timeLimit)
	var rows []row
	for s, side := range sides {
		rows = append(rows, row{name: name + ": ops/s " + side.name, value: median(rates[s]), unit: "/s", goal: "measured", pass: true,
			note: fmt.Sprintf("median of %d rounds: %s; acquisitions/s %s", rounds, numbers(rates[s]), numbers(acqs[s]))})
	}
	for s, side := range sides[1:] {
		// The cost is the median of the rounds' own: each round ran
		// back to back, so a spell of load elsewhere on the machine
		// moves all its sides.
		var costs []float64
		for i := range rates[0] {
			costs = append(costs, (rates[0][i]-rates[s+1][i])/rates[0][i]*100)
		}
		cost := median(costs)
		rows = append(rows, row{name: "the power layer's cost to etcd's ops/s" + strings.TrimPrefix(side.name, "on the layer"), value: cost, unit: "%", goal: "<= 25%", pass: cost <= 25,
			note: fmt.Sprintf("median of the rounds' costs: %s; of the medians above: %.0f%%", percents(costs), (median(rates[0])-median(rates[s+1]))/median(rates[0])*100)})
	}
	for _, side := range sides[1:] {
		rows = append(rows, fsyncRows(side)...)
	}
	return rows
}

// fsyncRows times O_DSYNC writes of 4 KiB (dd oflag=dsync: each write is
// synced before it returns) in one etcd node on the layer: through the
// layer, and straight to the disk below it (DiskDir), rounds interleaved.
// The node's etcd server runs, idle.
func fsyncRows(side layerSide) []row {
	const writes, rounds = 200, 3
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := dockerEtcdConfig()
	cfg.Clients, cfg.PowerLayer, cfg.AgentBinary = 1, true, side.binary
	label := strings.TrimPrefix(side.name, "on the layer")
	b, err := harness.SetUpBare(ctx, cfg)
	if err != nil {
		return []row{failedRow("fsync through the power layer"+label, err)}
	}
	defer b.Close(context.Background())
	info, _ := registry.Lookup(cfg.Backend)
	dir := info.DataDir
	var lat [2][]float64
	for range rounds {
		for s, d := range []string{dir, nemesis.DiskDir(dir)} {
			f := d + "/fsync-probe"
			script := fmt.Sprintf(`s=$(date +%%s%%N); dd if=/dev/zero of=%s bs=4k count=%d oflag=dsync status=none || exit 1; e=$(date +%%s%%N); rm -f %s; echo $(( (e - s) / %d ))`, f, writes, f, writes)
			res, err := b.Cluster().Exec(ctx, "n1", []string{"sh", "-c", script})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
			}
			if err != nil {
				return []row{failedRow("fsync through the power layer"+label, err)}
			}
			ns, err := strconv.ParseFloat(strings.TrimSpace(res.Stdout), 64)
			if err != nil {
				return []row{failedRow("fsync through the power layer"+label, fmt.Errorf("dd's timing %q: %w", res.Stdout, err))}
			}
			lat[s] = append(lat[s], ns/1e6)
		}
	}
	direct, layer := median(lat[1]), median(lat[0])
	return []row{
		{name: "a 4 KiB O_DSYNC write straight to the disk below the layer" + label, value: direct, unit: "ms", goal: "measured", pass: true,
			note: fmt.Sprintf("median of %d rounds of %d writes: %s ms each", rounds, writes, numbers(lat[1]))},
		{name: "a 4 KiB O_DSYNC write through the layer" + label, value: layer, unit: "ms", goal: "measured", pass: true,
			note: fmt.Sprintf("median of %d rounds of %d writes, each round right after one direct: %s ms each; %.2f× direct", rounds, writes, numbers(lat[0]), layer/direct)},
	}
}

func numbers(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, ", ")
}

func percents(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f%%", x)
	}
	return strings.Join(parts, ", ")
}
