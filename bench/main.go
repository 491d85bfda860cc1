// Command bench measures fencecheck against its speed and power goals and
// prints one table: name, value, unit, goal, pass or fail. Run it with
// bench/run; --docker adds the rows that need the Docker engine (etcd,
// cluster and image timings, and the long run: 10 minutes on etcd with
// every fault, the harness's memory sampled throughout; --only long runs it
// alone; the overhead group measures a run's cost beyond its workload on
// each backend, on new clusters and on warm ones; --only preset runs the
// jepsen-etcd preset on both; --only parallel runs a preset at several
// --parallel widths with the same seed; --only power-layer runs etcd
// without and with the power faults' filesystem layer, interleaved; --only
// exposure-rate runs each backend fenced with today's pause-holder schedule
// and with check --preset ci-bound's, and etcd unfenced with both; --only stress runs back-to-back pause-holder runs on etcd beside
// CPU, disk and memory pressure, and only when asked for by name). It is a
// measurement, never a test: nothing here fails CI.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	_ "github.com/fencecheck/fencecheck/backends/all" // every backend the rows run
)

type row struct {
	name  string
	value float64
	unit  string
	goal  string
	pass  bool
	note  string
}

// flags is bench's command line, parsed once: main picks the mode (one of
// the internal children, the stress group, or the table of groups) and each
// group takes only the values it needs.
type flags struct {
	checkerCase      int
	overheadRuns     int
	overheadOn       string
	presetRuns       int
	docker           bool
	runs             int
	runsSet          bool // --runs was given: the stress group's default of 50 gives way
	only             string
	longTime         time.Duration
	longEvery        time.Duration
	longSamples      string
	stressKind       string
	stressTime       time.Duration
	stressLeave      float64
	stressHogMax     float64
	stressDiskFiles  int
	stressDiskMiB    int
	hold             time.Duration
	checkFile        string
	checkPath        string
	checkMemory      int64
	scaleSizes       string
	exposureCase     bool
	parallelPresets  string
	parallelWidths   string
	parallelRuns     int
	parallelTime     time.Duration
	parallelSeed     int64
	powerPairs       int
	powerTime        time.Duration
	powerBefore      string
	rateBackends     string
	rateTime         time.Duration
	rateUnfencedTime time.Duration
	rateSeeds        int
	rateStore        string
}

func parseFlags() flags {
	var f flags
	flag.IntVar(&f.checkerCase, "checker-case", -1, "internal: check one synthetic case and print its numbers")
	flag.IntVar(&f.overheadRuns, "overhead-runs", 3, "runs per side (new cluster, warm cluster) of each backend in the overhead group")
	flag.StringVar(&f.overheadOn, "overhead-backends", "etcd,zookeeper,postgres,redis", "backends of the overhead group (comma list), each measured on new and on warm clusters; backend:deployment for one of a backend's deployments (redis:sentinel: --redis-topology sentinel)")
	flag.IntVar(&f.presetRuns, "preset-runs", 10, "runs per cell of the jepsen-etcd preset in the preset group (only when named: --only preset)")
	flag.BoolVar(&f.docker, "docker", false, "also run the rows that need Docker (etcd, cluster, image)")
	flag.IntVar(&f.runs, "runs", 20, "runs per detection row in Docker (each about 25 s; with --docker, group detection)")
	flag.StringVar(&f.only, "only", "", "run only the rows whose group contains this word (checker, scale, harness, detection, docker, overhead, long, preset, parallel, power-layer, exposure-rate); scale, preset, parallel, power-layer and exposure-rate run only when asked for")
	flag.DurationVar(&f.longTime, "long-time", 10*time.Minute, "workload length of the long run (group long, with --docker)")
	flag.DurationVar(&f.longEvery, "long-sample", 5*time.Second, "how often the long run samples the harness's memory")
	flag.StringVar(&f.longSamples, "long-samples", "", "write the long run's memory samples to this file (tab-separated)")
	flag.StringVar(&f.stressKind, "stress-child", "", "internal: run one kind of pressure (cpu, disk, mem) until killed")
	flag.DurationVar(&f.stressTime, "stress-time", 25*time.Second, "time limit of each stress run (group stress, with --docker)")
	flag.Float64Var(&f.stressLeave, "stress-leave-gib", 3, "GiB of MemAvailable the stress group's memory hog leaves")
	flag.Float64Var(&f.stressHogMax, "stress-hog-max-gib", 0, "GiB the memory hog may hold at most (0: all but --stress-leave-gib)")
	flag.IntVar(&f.stressDiskFiles, "stress-disk-files", 4, "files the stress group's disk writer rotates through")
	flag.IntVar(&f.stressDiskMiB, "stress-disk-mib", 256, "MiB per file of the disk writer")
	flag.DurationVar(&f.hold, "hold", time.Second, "detection rows: also a random pause with this --hold (0: no such row)")
	flag.StringVar(&f.checkFile, "check-file", "", "internal: check this history file and print its numbers")
	flag.StringVar(&f.checkPath, "check-path", "new", "internal: with --check-file, new (streaming) or old (whole-key search)")
	flag.Int64Var(&f.checkMemory, "check-memory-bytes", 4<<30, "internal: with --check-file, the check's memory bound")
	flag.StringVar(&f.scaleSizes, "scale-sizes", "100k,1M,10M", "op counts of the scale group's histories (comma list; k and M allowed)")
	flag.BoolVar(&f.exposureCase, "exposure-case", false, "internal: count the exposures of the exposure row's history and print the numbers")
	flag.StringVar(&f.parallelPresets, "parallel-presets", "jepsen-etcd", "presets of the parallel group (comma list; only when named: --only parallel)")
	flag.StringVar(&f.parallelWidths, "parallel-widths", "1,2,3,4", "--parallel values of the parallel group, the first the one the others are held against")
	flag.IntVar(&f.parallelRuns, "parallel-runs", 3, "runs per cell in the parallel group")
	flag.DurationVar(&f.parallelTime, "parallel-time", 30*time.Second, "time limit of each run in the parallel group (0: the preset's)")
	flag.Int64Var(&f.parallelSeed, "parallel-seed", 5000, "seed of the parallel group's comparisons, the same at every width")
	flag.IntVar(&f.powerPairs, "power-layer-rounds", 5, "rounds of etcd runs (without the power faults' filesystem layer, then with it) in the power-layer group (only when named: --only power-layer)")
	flag.StringVar(&f.powerBefore, "power-layer-before", "", "a check binary of an earlier commit: the power-layer group also runs the layer as it has it, in every round (a change's before and after in one run)")
	flag.DurationVar(&f.powerTime, "power-layer-time", 20*time.Second, "time limit of each run in the power-layer group")
	flag.StringVar(&f.rateBackends, "exposure-rate-backends", "etcd,zookeeper,postgres,redis,kubernetes", "backends of the exposure-rate group (comma list; only when named: --only exposure-rate), each run fenced with today's pause-holder schedule and with check --preset ci-bound's; redis runs setnx-incr, postgres lease")
	flag.DurationVar(&f.rateTime, "exposure-rate-time", 40*time.Second, "time limit of each fenced run in the exposure-rate group, both schedules alike")
	flag.DurationVar(&f.rateUnfencedTime, "exposure-rate-unfenced-time", 20*time.Second, "time limit of each unfenced etcd run in the exposure-rate group (0: none), --exposure-rate-seeds runs per schedule")
	flag.IntVar(&f.rateSeeds, "exposure-rate-seeds", 5, "unfenced etcd runs per schedule in the exposure-rate group (seeds 1 to N), whose median time to the first violation is compared")
	flag.StringVar(&f.rateStore, "exposure-rate-store", "", "store of the exposure-rate group's runs, all kept (default: a new temporary directory, printed)")
	flag.Parse()
	flag.Visit(func(fl *flag.Flag) { f.runsSet = f.runsSet || fl.Name == "runs" })
	return f
}

func main() {
	f := parseFlags()
	switch {
	case f.exposureCase:
		exposureChild()
	case f.checkerCase >= 0:
		checkerChild(f.checkerCase)
	case f.stressKind != "":
		stressChild(f.stressKind, flag.Args())
	case f.docker && strings.Contains(f.only, "stress"):
		// Only when asked for by name: 50 runs take about half an hour.
		printAndExit(stressRows(stressFlags(f)))
	case f.checkFile != "":
		checkFileChild(f.checkFile, f.checkPath, f.checkMemory)
	default:
		printAndExit(groupRows(f))
	}
}

// groupRows runs every group --only and --docker let through, in the
// table's order. Scale, preset and parallel run only when named: they take
// long enough that a plain run must not start them.
func groupRows(f flags) []row {
	var rows []row
	want := func(group string) bool { return f.only == "" || strings.Contains(group, f.only) }
	if want("checker") {
		for i := range checkerCases {
			rows = append(rows, runCheckerCase(i)...)
			fmt.Fprintf(os.Stderr, "bench: %s done\n", checkerCases[i].name)
		}
		rows = append(rows, exposureRows()...)
	}
	if f.only != "" && want("scale") {
		rows = append(rows, scaleRows(scaleSizes(f.scaleSizes), 4<<30)...)
	}
	if want("harness") {
		rows = append(rows, harnessRows()...)
	}
	if want("detection") {
		rows = append(rows, detectionRows(f.hold)...)
	}
	if f.docker && want("detection") {
		rows = append(rows, dockerDetectionRows(f.runs, f.hold)...)
	}
	if f.docker && want("docker") {
		rows = append(rows, dockerRows()...)
	}
	if f.docker && want("overhead") {
		backends, err := overheadBackends(f.overheadOn)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(254)
		}
		rows = append(rows, overheadRows(f.overheadRuns, backends)...)
	}
	if f.docker && f.only != "" && want("preset") {
		rows = append(rows, presetRows(f.presetRuns)...)
	}
	if f.docker && f.only != "" && want("parallel") {
		rows = append(rows, parallelRows(parallelFlags(f))...)
	}
	if f.docker && f.only != "" && want("power-layer") {
		if f.powerPairs < 1 || f.powerTime < time.Second {
			fmt.Fprintln(os.Stderr, "bench: --power-layer-rounds must be at least 1 and --power-layer-time at least 1s")
			os.Exit(254)
		}
		rows = append(rows, powerLayerRows(f.powerPairs, f.powerTime, f.powerBefore)...)
	}
	if f.docker && f.only != "" && want("exposure-rate") {
		o, err := exposureRateFlags(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(254)
		}
		rows = append(rows, exposureRateRows(o)...)
	}
	if f.docker && want("long") {
		rows = append(rows, longRows(f.longTime, f.longEvery, f.longSamples)...)
	}
	return rows
}

// stressFlags are the stress group's options from the command line; a bad
// value ends bench with 254, the exit of a usage error.
func stressFlags(f flags) stressOptions {
	o := stressOptions{runs: 50, timeLimit: f.stressTime, leave: int64(f.stressLeave * (1 << 30)), hogMax: int64(f.stressHogMax * (1 << 30)),
		diskFiles: f.stressDiskFiles, diskFile: int64(f.stressDiskMiB) << 20}
	if f.runsSet {
		o.runs = f.runs
	}
	if o.runs < 1 || o.timeLimit < time.Second || o.leave < 0 || o.hogMax < 0 || o.diskFiles < 1 || f.stressDiskMiB < 1 {
		fmt.Fprintln(os.Stderr, "bench: --runs, --stress-time, --stress-disk-files and --stress-disk-mib must be positive, the GiB values not negative")
		os.Exit(254)
	}
	return o
}

// scaleSizes reads --scale-sizes (a comma list of op counts, k and M
// allowed); a bad count ends bench with 254.
func scaleSizes(list string) []int {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		switch {
		case strings.HasSuffix(f, "M"):
			mult, f = 1_000_000, strings.TrimSuffix(f, "M")
		case strings.HasSuffix(f, "k"):
			mult, f = 1000, strings.TrimSuffix(f, "k")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench: --scale-sizes: %q is not an op count (e.g. 100k,1M,10M)\n", f)
			os.Exit(254)
		}
		sizes = append(sizes, n*mult)
	}
	return sizes
}

// parallelFlags are the parallel group's options from the command line; a
// width that is not a positive number ends bench with 254.
func parallelFlags(f flags) parallelOptions {
	o := parallelOptions{presets: strings.Split(f.parallelPresets, ","), runs: f.parallelRuns, timeLimit: f.parallelTime, seed: f.parallelSeed}
	for _, w := range strings.Split(f.parallelWidths, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: --parallel-widths: %q is not a width (e.g. 1,2,3,4)\n", w)
			os.Exit(254)
		}
		o.widths = append(o.widths, n)
	}
	return o
}

// printAndExit prints the table and exits 1 when any row missed its goal,
// so bench/run can tell a failed goal from a clean table.
func printAndExit(rows []row) {
	print(rows)
	for _, r := range rows {
		if !r.pass {
			os.Exit(1)
		}
	}
}

func print(rows []row) {
	w := 0
	for _, r := range rows {
		w = max(w, len([]rune(r.name)))
	}
	fmt.Printf("%-*s  %12s  %-5s  %-26s  %s\n", w, "name", "value", "unit", "goal", "result")
	for _, r := range rows {
		res := "pass"
		if !r.pass {
			res = "FAIL"
		}
		if r.note != "" {
			res += "  (" + r.note + ")"
		}
		fmt.Printf("%-*s  %12.3f  %-5s  %-26s  %s\n", w, r.name, r.value, r.unit, r.goal, res)
	}
}
