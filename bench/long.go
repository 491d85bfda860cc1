package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fencecheck/fencecheck/runstore"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// longFaults is every fault the etcd backend accepts, one word per kind:
// the partition-one/-halves/-ring/-bridge/-primary words are single shapes
// of `partition`, which picks among all of them.
var longFaults = []string{"pause", "pause-holder", "pause-server", "pause-leader", "partition", "partition-client",
	"partition-client-storage", "kill", "kill-leader", "latency"}

type longResults struct {
	Verdict     string  `json:"verdict"`
	Explanation string  `json:"explanation"`
	DurationS   float64 `json:"duration_s"`
	CheckS      float64 `json:"check_s"`
	Events      int64   `json:"events"`
	Error       string  `json:"error"`
	Keys        []struct {
		Key     string `json:"key"`
		Verdict string `json:"verdict"`
		Ops     int    `json:"ops"`
	} `json:"keys"`
	Stats struct {
		Ops map[string]map[string]int `json:"ops"`
	} `json:"stats"`
}

// longRows runs one long test on etcd in Docker with every fault and
// fencing on, samples the harness's own memory while it runs, and checks
// that it completed, checked, reported and healed. samplesFile, when set,
// gets every sample as tab-separated values.
func longRows(limit, every time.Duration, samplesFile string) []row {
	const name = "long"
	cfg := harness.Config{Backend: "etcd", Cluster: "docker", Nodes: 3, Fencing: "all", Nemesis: longFaults, Clients: 5, Keys: 3,
		TimeLimit: limit, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond, NemesisInterval: 2 * time.Second,
		CheckTimeout: 5 * time.Minute, Store: tempStore(), Seed: 1, KeepCluster: true}
	title := fmt.Sprintf("%s: etcd 3 nodes, 5 clients, 3 keys, fencing all, %d faults, %s", name, len(longFaults), limit)
	// A missing image would be built (debootstrap, apt, the Go module
	// proxy): a measurement must not reach out to the network, so it asks
	// for the image to be built first instead.
	if err := imagePresent(); err != nil {
		os.RemoveAll(cfg.Store)
		return []row{failedRow(title, err)}
	}

	// An interrupt stops the workload; the run then heals, checks and
	// reports, and the cluster is taken down below. A second one kills.
	stopCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	go func() { <-stopCtx.Done(); stopSignals() }()

	w := &longWatch{echo: os.Stderr, workStart: make(chan struct{})}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { defer close(sampled); w.run(limit, every, stop) }()
	start := time.Now()
	out, runErr := harness.Run(harness.Signals{Stop: stopCtx, Abort: context.Background()}, cfg, w)
	wall := time.Since(start)
	peakAll := procStatus("VmHWM")
	close(stop)
	<-sampled

	var problems []string
	var healErr error
	if out != nil && out.TestID != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		problems, healErr = healProblems(ctx, out.TestID)
		cli, err := engine.Connect(ctx)
		if err == nil {
			if err := engine.DownAll(ctx, cli, out.TestID); err != nil {
				fmt.Fprintf(os.Stderr, "bench: taking down %s: %v (check cluster down --id %s)\n", out.TestID, err, out.TestID)
			}
			cli.Close()
		}
		cancel()
	}
	if out == nil || out.Dir == "" {
		os.RemoveAll(cfg.Store)
		return []row{failedRow(title, runErr)}
	}

	var rows []row
	var res longResults
	resErr := func() error {
		b, err := os.ReadFile(runstore.Run(out.Dir).Results())
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &res)
	}()
	rows = append(rows, longVerdictRows(name, title, out, runErr)...)
	rows = append(rows, row{name: name + ": wall time, setup to reports", value: wall.Seconds(), unit: "s",
		goal: fmt.Sprintf("< %.0f s (limit + 3 min)", (limit + 3*time.Minute).Seconds()), pass: wall < limit+3*time.Minute})

	rows = append(rows, longHeapRows(name, w, every, res, peakAll)...)
	rows = append(rows, longFileRows(name, out.Dir, resErr, problems, healErr)...)

	if samplesFile != "" {
		if err := writeSamples(samplesFile, w.samples); err != nil {
			fmt.Fprintf(os.Stderr, "bench: writing %s: %v\n", samplesFile, err)
		}
	}
	keep := false
	for _, r := range rows {
		keep = keep || !r.pass
	}
	if keep {
		fmt.Fprintf(os.Stderr, "bench: long run kept in %s\n", out.Dir)
	} else {
		os.RemoveAll(cfg.Store)
	}
	return rows
}

// longVerdictRows read the run's history: whether it completed, checked
// valid, and injected every kind of fault.
func longVerdictRows(name, title string, out *harness.RunResult, runErr error) []row {
	var rows []row
	events, _ := history.ParseFile(runstore.Run(out.Dir).History())
	ops, _ := history.Pair(events)
	injected := map[string]int{}
	failedStarts := map[string]int{}
	var healErrors []string
	for _, e := range events {
		if !e.IsNemesis() {
			continue
		}
		switch {
		case e.Type == history.Invoke:
			injected[e.F]++
		case e.Type == history.Info && len(e.Nodes) == 0:
			failedStarts[e.F]++ // a start that failed or found nothing
		case e.Type == history.Info && strings.HasPrefix(e.Error, "heal:"):
			healErrors = append(healErrors, e.F+": "+e.Error)
		}
	}
	var infoOps int
	for _, o := range ops {
		if o.Type == history.Info {
			infoOps++
		}
	}

	verdict := string(out.Result.Verdict)
	note := fmt.Sprintf("verdict %s, %d events, %d ops (%d info)", verdict, len(events), len(ops), infoOps)
	if out.Interrupted {
		note += ", interrupted"
	}
	if runErr != nil {
		note += "; error: " + runErr.Error()
	}
	if out.Result.Explanation != "" {
		note += "; " + out.Result.Explanation
	}
	runOK := runErr == nil && out.Result.Verdict == models.Valid && !out.Interrupted
	if !runOK {
		note += "; store kept: " + out.Dir
	}
	rows = append(rows, row{name: title + ": completed, checked, verdict", value: float64(len(ops)), unit: "ops", goal: "valid, no error", pass: runOK, note: note})

	var kinds []string
	missing := 0
	for _, f := range longFaults {
		kinds = append(kinds, fmt.Sprintf("%s %d", f, injected[f]))
		if failedStarts[f] > 0 {
			kinds[len(kinds)-1] += fmt.Sprintf("(+%d not started)", failedStarts[f])
		}
		if injected[f] == 0 {
			missing++
		}
	}
	total := 0
	for _, n := range injected {
		total += n
	}
	faultNote := strings.Join(kinds, ", ")
	if len(healErrors) > 0 {
		faultNote += "; heal errors: " + strings.Join(healErrors, "; ")
	}
	rows = append(rows, row{name: name + ": faults injected, every kind at least once", value: float64(total), unit: "", goal: "each kind >= 1, healed",
		pass: missing == 0 && len(healErrors) == 0, note: faultNote})

	return rows
}

// longHeapRows are the harness's own memory while it ran, as the watch
// sampled it, and the check's time.
func longHeapRows(name string, w *longWatch, every time.Duration, res longResults, peakAll uint64) []row {
	var rows []row
	w.mu.Lock()
	defer w.mu.Unlock()
	checkTime := w.verdict.Sub(w.recorded)
	rows = append(rows, row{name: name + ": check time (read back + linearizability search)", value: checkTime.Seconds(), unit: "s", goal: "measured", pass: !w.verdict.IsZero(),
		note: fmt.Sprintf("search alone %.2f s (results.json check_s); keys: %s", res.CheckS, keySummary(res))})

	if w.at20 != nil && w.atEnd != nil {
		a, b := *w.at20, *w.atEnd
		dEvents := b.events - a.events
		growth := float64(int64(b.heapLive) - int64(a.heapLive))
		per1k := 0.0
		if dEvents > 0 {
			per1k = growth / float64(dEvents) * 1000
		}
		rows = append(rows,
			row{name: name + ": live heap at 20% of the workload (after a forced GC)", value: mib(a.heapLive), unit: "MiB", goal: "measured", pass: true,
				note: fmt.Sprintf("at %.0f s, %d events; heap in use %.2f MiB, RSS %.1f MiB, %d goroutines", a.at.Seconds(), a.events, mib(a.heapInuse), mib(a.rss), a.goroutines)},
			row{name: name + ": live heap at the end of the workload (after a forced GC)", value: mib(b.heapLive), unit: "MiB", goal: "measured", pass: true,
				note: fmt.Sprintf("at %.0f s, %d events; heap in use %.2f MiB, RSS %.1f MiB, %d goroutines; %+.1f%% since 20%%", b.at.Seconds(), b.events, mib(b.heapInuse), mib(b.rss), b.goroutines,
					growth/float64(a.heapLive)*100)},
			row{name: name + ": live heap growth per 1,000 events, 20% → end of workload", value: per1k, unit: "B", goal: fmt.Sprintf("< %d B (flat)", flatBytesPer1k),
				pass: per1k < flatBytesPer1k && dEvents > 0, note: fmt.Sprintf("%+.0f KiB over %d events; keeping them would cost ~%.0f KiB", growth/1024, dEvents, float64(dEvents)*200/1024)},
		)
		if c := w.after; c != nil {
			rows = append(rows, row{name: name + ": live heap after the workload, clients closed (after a forced GC)", value: mib(c.heapLive), unit: "MiB", goal: "measured", pass: true,
				note: fmt.Sprintf("at %.0f s, %d events; heap in use %.2f MiB, RSS %.1f MiB, %d goroutines", c.at.Seconds(), c.events, mib(c.heapInuse), mib(c.rss), c.goroutines)})
		}
		slope, n := liveSlope(w.samples, a.at, b.at)
		rows = append(rows, row{name: name + ": live heap trend per 1,000 events, least squares over the samples", value: slope, unit: "B", goal: "measured", pass: true,
			note: fmt.Sprintf("%d samples every %s, no forced GC (live heap as of the last GC)", n, every)})
	} else {
		rows = append(rows, row{name: name + ": live heap at 20% and at the end of the workload", value: -1, note: "not sampled: the workload ended early"})
	}
	rows = append(rows, row{name: name + ": peak RSS while checking (read back + search)", value: mib(w.peakCheck), unit: "MiB", goal: "measured", pass: w.peakCheck > 0,
		note: fmt.Sprintf("VmHWM reset when recording ended; %.1f MiB with the reports; setup's peak %.1f MiB (the agent binary copied to every node)",
			mib(peakAll), mib(w.peakSetup))})

	return rows
}

// longFileRows say whether the run's files were written and its faults
// healed.
func longFileRows(name, dir string, resErr error, problems []string, healErr error) []row {
	var rows []row
	var missingFiles []string
	for _, f := range []string{runstore.ResultsFile, runstore.ReportFile, runstore.HistoryFile, runstore.LogFile} {
		if st, err := os.Stat(runstore.Run(dir).File(f)); err != nil || st.Size() == 0 {
			missingFiles = append(missingFiles, f)
		}
	}
	repNote := "results.json, report.html, history.jsonl, check.log"
	if resErr != nil {
		repNote += "; results.json: " + resErr.Error()
	}
	if len(missingFiles) > 0 {
		repNote = "missing or empty: " + strings.Join(missingFiles, ", ")
	}
	rows = append(rows, row{name: name + ": reports written", value: float64(4 - len(missingFiles)), unit: "files", goal: "4 of 4", pass: len(missingFiles) == 0 && resErr == nil, note: repNote})

	healNote := "no container paused, no iptables rule or delayer left, every etcd member healthy"
	if healErr != nil {
		healNote = "could not inspect: " + healErr.Error()
	} else if len(problems) > 0 {
		healNote = strings.Join(problems, "; ")
	}
	rows = append(rows, row{name: name + ": faults healed after the run", value: float64(len(problems)), unit: "left", goal: "0", pass: healErr == nil && len(problems) == 0, note: healNote})

	return rows
}

func keySummary(res longResults) string {
	var ks []string
	for _, k := range res.Keys {
		ks = append(ks, fmt.Sprintf("%s %s %d ops", k.Key, k.Verdict, k.Ops))
	}
	return strings.Join(ks, ", ")
}
