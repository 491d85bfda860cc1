// Command bench measures fencecheck against its speed and power goals and
// prints one table: name, value, unit, goal, pass or fail. Run it with
// bench/run; --docker adds the rows that need the Docker engine (etcd,
// cluster and image timings, and the long run: 10 minutes on etcd with
// every fault, the harness's memory sampled throughout; --only long runs it
// alone; the overhead group measures a run's cost beyond its workload on
// each backend, on new clusters and on warm ones; --only preset runs the
// jepsen-etcd preset on both; --only parallel runs a preset at several
// --parallel widths with the same seed; --only stress runs back-to-back pause-holder runs on etcd beside
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

func main() {
	checkerCase := flag.Int("checker-case", -1, "internal: check one synthetic case and print its numbers")
	overheadRuns := flag.Int("overhead-runs", 3, "runs per side (new cluster, warm cluster) of each backend in the overhead group")
	presetRuns := flag.Int("preset-runs", 10, "runs per cell of the jepsen-etcd preset in the preset group (only when named: --only preset)")
	docker := flag.Bool("docker", false, "also run the rows that need Docker (etcd, cluster, image)")
	runs := flag.Int("runs", 20, "runs per detection row in Docker (each about 25 s; with --docker, group detection)")
	only := flag.String("only", "", "run only the rows whose group contains this word (checker, scale, harness, detection, docker, overhead, long, preset, parallel); scale, preset and parallel run only when asked for")
	longTime := flag.Duration("long-time", 10*time.Minute, "workload length of the long run (group long, with --docker)")
	longEvery := flag.Duration("long-sample", 5*time.Second, "how often the long run samples the harness's memory")
	longSamples := flag.String("long-samples", "", "write the long run's memory samples to this file (tab-separated)")
	stressKind := flag.String("stress-child", "", "internal: run one kind of pressure (cpu, disk, mem) until killed")
	stressTime := flag.Duration("stress-time", 25*time.Second, "time limit of each stress run (group stress, with --docker)")
	stressLeave := flag.Float64("stress-leave-gib", 3, "GiB of MemAvailable the stress group's memory hog leaves")
	stressHogMax := flag.Float64("stress-hog-max-gib", 0, "GiB the memory hog may hold at most (0: all but --stress-leave-gib)")
	stressDiskFiles := flag.Int("stress-disk-files", 4, "files the stress group's disk writer rotates through")
	stressDiskMiB := flag.Int("stress-disk-mib", 256, "MiB per file of the disk writer")
	hold := flag.Duration("hold", time.Second, "detection rows: also a random pause with this --hold (0: no such row)")
	checkFile := flag.String("check-file", "", "internal: check this history file and print its numbers")
	checkPath := flag.String("check-path", "new", "internal: with --check-file, new (streaming) or old (whole-key search)")
	checkMemory := flag.Int64("check-memory-bytes", 4<<30, "internal: with --check-file, the check's memory bound")
	scaleSizes := flag.String("scale-sizes", "100k,1M,10M", "op counts of the scale group's histories (comma list; k and M allowed)")
	exposureCase := flag.Bool("exposure-case", false, "internal: count the exposures of the exposure row's history and print the numbers")
	parallelPresets := flag.String("parallel-presets", "jepsen-etcd", "presets of the parallel group (comma list; only when named: --only parallel)")
	parallelWidths := flag.String("parallel-widths", "1,2,3,4", "--parallel values of the parallel group, the first the one the others are held against")
	parallelRunsN := flag.Int("parallel-runs", 3, "runs per cell in the parallel group")
	parallelTime := flag.Duration("parallel-time", 30*time.Second, "time limit of each run in the parallel group (0: the preset's)")
	parallelSeed := flag.Int64("parallel-seed", 5000, "seed of the parallel group's comparisons, the same at every width")
	flag.Parse()
	if *exposureCase {
		exposureChild()
		return
	}
	if *checkerCase >= 0 {
		checkerChild(*checkerCase)
		return
	}
	if *stressKind != "" {
		stressChild(*stressKind, flag.Args())
		return
	}
	runsSet := false
	flag.Visit(func(f *flag.Flag) { runsSet = runsSet || f.Name == "runs" })
	if *docker && strings.Contains(*only, "stress") {
		// Only when asked for by name: 50 runs take about half an hour.
		o := stressOptions{runs: 50, timeLimit: *stressTime, leave: int64(*stressLeave * (1 << 30)), hogMax: int64(*stressHogMax * (1 << 30)),
			diskFiles: *stressDiskFiles, diskFile: int64(*stressDiskMiB) << 20}
		if runsSet {
			o.runs = *runs
		}
		if o.runs < 1 || o.timeLimit < time.Second || o.leave < 0 || o.hogMax < 0 || o.diskFiles < 1 || *stressDiskMiB < 1 {
			fmt.Fprintln(os.Stderr, "bench: --runs, --stress-time, --stress-disk-files and --stress-disk-mib must be positive, the GiB values not negative")
			os.Exit(254)
		}
		rows := stressRows(o)
		print(rows)
		for _, r := range rows {
			if !r.pass {
				os.Exit(1)
			}
		}
		return
	}
	if *checkFile != "" {
		checkFileChild(*checkFile, *checkPath, *checkMemory)
		return
	}
	var rows []row
	want := func(group string) bool { return *only == "" || strings.Contains(group, *only) }
	if want("checker") {
		for i := range checkerCases {
			rows = append(rows, runCheckerCase(i)...)
			fmt.Fprintf(os.Stderr, "bench: %s done\n", checkerCases[i].name)
		}
		rows = append(rows, exposureRows()...)
	}
	if *only != "" && want("scale") {
		var sizes []int
		for _, f := range strings.Split(*scaleSizes, ",") {
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
		rows = append(rows, scaleRows(sizes, 4<<30)...)
	}
	if want("harness") {
		rows = append(rows, harnessRows()...)
	}
	if want("detection") {
		rows = append(rows, detectionRows(*hold)...)
	}
	if *docker && want("detection") {
		rows = append(rows, dockerDetectionRows(*runs, *hold)...)
	}
	if *docker && want("docker") {
		rows = append(rows, dockerRows()...)
	}
	if *docker && want("overhead") {
		rows = append(rows, overheadRows(*overheadRuns)...)
	}
	if *docker && *only != "" && want("preset") {
		rows = append(rows, presetRows(*presetRuns)...)
	}
	if *docker && *only != "" && want("parallel") {
		o := parallelOptions{presets: strings.Split(*parallelPresets, ","), runs: *parallelRunsN, timeLimit: *parallelTime, seed: *parallelSeed}
		for _, f := range strings.Split(*parallelWidths, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "bench: --parallel-widths: %q is not a width (e.g. 1,2,3,4)\n", f)
				os.Exit(254)
			}
			o.widths = append(o.widths, n)
		}
		rows = append(rows, parallelRows(o)...)
	}
	if *docker && want("long") {
		rows = append(rows, longRows(*longTime, *longEvery, *longSamples)...)
	}
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
