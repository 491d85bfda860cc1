package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/compose"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
)

// longFaults is every fault the etcd backend accepts, one word per kind:
// the partition-one/-halves/-ring/-bridge/-primary words are single shapes
// of `partition`, which picks among all of them.
var longFaults = []string{"pause", "pause-holder", "pause-server", "pause-leader", "partition", "partition-client",
	"partition-client-storage", "kill", "kill-leader", "latency"}

// flatBytesPer1k is what "flat" means: the live heap may grow by less than
// 1 KiB per 1,000 events recorded between 20% of the workload and its end.
// Keeping the events in memory would cost about 200 bytes each (the
// history.Event and its strings), i.e. ~200 KiB per 1,000: the bound is
// half a percent of that.
const flatBytesPer1k = 1024

// memSample is the harness process's memory at one moment.
type memSample struct {
	at         time.Duration // since the workload started
	phase      string
	events     int64 // lines in history.jsonl
	heapLive   uint64
	heapInuse  uint64
	rss        uint64
	goroutines int
}

func readMem(forceGC bool) (live, inuse uint64, goroutines int) {
	if forceGC {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, ms.HeapInuse, runtime.NumGoroutine()
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64() + s[2].Value.Uint64(), runtime.NumGoroutine()
}

// procStatus reads a kB field (VmRSS, VmHWM) of /proc/self/status, in bytes.
func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseUint(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux ≥ 4.0).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// lineCounter counts the lines of a growing file, reading only what was
// appended since the last call.
type lineCounter struct {
	path  string
	off   int64
	lines int64
}

func (c *lineCounter) count() int64 {
	if c.path == "" {
		return 0
	}
	f, err := os.Open(c.path)
	if err != nil {
		return c.lines
	}
	defer f.Close()
	if _, err := f.Seek(c.off, io.SeekStart); err != nil {
		return c.lines
	}
	buf := make([]byte, 256<<10)
	for {
		n, err := f.Read(buf)
		c.lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		c.off += int64(n)
		if err != nil {
			return c.lines
		}
	}
}

// longWatch follows a run through its log lines (Run's progress writer)
// and samples the process's memory while it goes.
type longWatch struct {
	mu       sync.Mutex
	echo     io.Writer
	dir      string
	counter  lineCounter
	started  time.Time // the workload's start
	ended    bool      // the workload ended (heal done, final reads begin)
	samples  []memSample
	at20     *memSample
	atEnd    *memSample // just before the time limit
	after    *memSample // the clients closed, before the final reads
	recorded time.Time
	checking time.Time
	verdict  time.Time
	// peakCheck is VmHWM from the end of recording (reset there) to the
	// verdict: reading the history back and the search.
	peakCheck uint64
	// peakSetup is VmHWM when the workload starts: setting up the cluster
	// (the agent binary is copied into every node).
	peakSetup uint64
	workStart chan struct{}
}

// markDuringWorkload takes a sample (after a forced GC) into *dst, unless
// the workload has already ended.
func (w *longWatch) markDuringWorkload(phase string, dst **memSample) {
	w.mu.Lock()
	ended := w.ended
	w.mu.Unlock()
	if ended {
		return
	}
	s := w.sample(phase, true)
	w.mu.Lock()
	*dst = &s
	w.mu.Unlock()
}

func (w *longWatch) sample(phase string, forceGC bool) memSample {
	live, inuse, g := readMem(forceGC)
	s := memSample{phase: phase, heapLive: live, heapInuse: inuse, rss: procStatus("VmRSS"), goroutines: g}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started.IsZero() {
		s.at = time.Since(w.started)
	}
	s.events = w.counter.count()
	w.samples = append(w.samples, s)
	return s
}

// Write gets Run's log lines, one per call.
func (w *longWatch) Write(b []byte) (int, error) {
	w.echo.Write(b)
	line := string(b)
	if len(line) < 14 || line[2] != ':' || line[12] != ' ' {
		return len(b), nil // not a log line (the closing summary)
	}
	line = line[13:] // the time stamp
	switch {
	case strings.HasPrefix(line, "test "):
		if i := strings.LastIndex(line, " store "); i >= 0 {
			w.mu.Lock()
			w.dir = strings.TrimSpace(line[i+len(" store "):])
			w.counter.path = filepath.Join(w.dir, "history.jsonl")
			w.mu.Unlock()
		}
	case strings.HasPrefix(line, "workload: "):
		peak := procStatus("VmHWM")
		w.mu.Lock()
		w.started, w.peakSetup = time.Now(), peak
		w.mu.Unlock()
		close(w.workStart)
	case strings.HasPrefix(line, "final reads"), strings.HasPrefix(line, "recorded "):
		w.mu.Lock()
		done := w.ended
		w.ended = true
		w.mu.Unlock()
		if !done {
			// After the heal, before the final reads: the clients are
			// closed, the history is complete but for the final reads.
			s := w.sample("after the workload", true)
			w.mu.Lock()
			w.after = &s
			w.mu.Unlock()
		}
		if strings.HasPrefix(line, "recorded ") {
			resetPeakRSS()
			w.mu.Lock()
			w.recorded = time.Now()
			w.mu.Unlock()
		}
	case strings.HasPrefix(line, "checking "):
		w.mu.Lock()
		w.checking = time.Now()
		w.mu.Unlock()
	case strings.HasPrefix(line, "verdict "):
		peak := procStatus("VmHWM")
		w.mu.Lock()
		if w.verdict.IsZero() {
			w.verdict, w.peakCheck = time.Now(), peak
		}
		w.mu.Unlock()
	}
	return len(b), nil
}

// run samples every `every` until stop is closed, and takes the 20% mark
// (after a forced GC) at 20% of limit into the workload.
func (w *longWatch) run(limit, every time.Duration, stop <-chan struct{}) {
	select {
	case <-w.workStart:
	case <-stop:
		return
	}
	mark := time.NewTimer(limit / 5)
	defer mark.Stop()
	// The end mark is taken just before the time limit, while the clients
	// still run, so both marks see the same connections and goroutines.
	endMark := time.NewTimer(limit - min(2*time.Second, limit/20))
	defer endMark.Stop()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-mark.C:
			w.markDuringWorkload("20% of the workload", &w.at20)
		case <-endMark.C:
			w.markDuringWorkload("end of workload", &w.atEnd)
		case <-t.C:
			w.mu.Lock()
			phase := "workload"
			switch {
			case !w.checking.IsZero() && w.verdict.IsZero():
				phase = "check"
			case !w.verdict.IsZero():
				phase = "reports"
			case w.ended:
				phase = "final reads, teardown, read back"
			}
			w.mu.Unlock()
			w.sample(phase, false)
		}
	}
}

// healProblems inspects the kept cluster: paused containers, partition or
// latency rules left in iptables, a delayer still running, an etcd member
// that is down or sees no leader.
func healProblems(ctx context.Context, testID string) (problems []string, err error) {
	cli, err := compose.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	c, err := compose.Attach(ctx, cli, testID)
	if err != nil {
		return nil, err
	}
	script := fmt.Sprintf(`n=0
for ch in %s %s; do r=$(iptables -w -S "$ch" 2>/dev/null | grep -c '^-A'); n=$((n + ${r:-0})); done
echo "rules $n"
if [ -e /run/fencecheck-delay.pid ]; then echo "delayer running"; fi`, nemesis.FenceChain, nemesis.DelayChain)
	for _, n := range c.Nodes {
		paused, err := c.Paused(ctx, n.Name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		if paused {
			problems = append(problems, n.Name+" is paused")
			continue
		}
		res, err := c.ExecPrivileged(ctx, n.Name, []string{"sh", "-c", script})
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		if !strings.Contains(res.Stdout, "rules 0") {
			problems = append(problems, fmt.Sprintf("%s: iptables %s", n.Name, strings.TrimSpace(res.Stdout)))
		}
		if strings.Contains(res.Stdout, "delayer running") {
			problems = append(problems, n.Name+": the latency delayer still runs")
		}
		if n.Role == compose.RoleServer {
			res, err := c.Exec(ctx, n.Name, []string{compose.BinaryPath, "probe", fmt.Sprintf("http://127.0.0.1:%d/health", etcd.ClientPort)})
			if err != nil || res.ExitCode != 0 {
				problems = append(problems, fmt.Sprintf("%s: etcd not healthy (%v %s)", n.Name, err, strings.TrimSpace(res.Stdout+res.Stderr)))
			}
		}
	}
	return problems, nil
}

// imagePresent says whether the daemon has the node image this build runs.
func imagePresent() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := compose.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	tag := compose.ImageTag()
	if _, err := cli.ImageInspect(ctx, tag); err != nil {
		return fmt.Errorf("the node image %s is not on the daemon (%v): build it first with check image build", tag, err)
	}
	return nil
}

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

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

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
		cli, err := compose.Connect(ctx)
		if err == nil {
			if err := compose.DownAll(ctx, cli, out.TestID); err != nil {
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
		b, err := os.ReadFile(filepath.Join(out.Dir, "results.json"))
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &res)
	}()
	events, _ := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
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

	rows = append(rows, row{name: name + ": wall time, setup to reports", value: wall.Seconds(), unit: "s",
		goal: fmt.Sprintf("< %.0f s (limit + 3 min)", (limit + 3*time.Minute).Seconds()), pass: wall < limit+3*time.Minute})

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

	var missingFiles []string
	for _, f := range []string{"results.json", "report.html", "history.jsonl", "check.log"} {
		if st, err := os.Stat(filepath.Join(out.Dir, f)); err != nil || st.Size() == 0 {
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

func keySummary(res longResults) string {
	var ks []string
	for _, k := range res.Keys {
		ks = append(ks, fmt.Sprintf("%s %s %d ops", k.Key, k.Verdict, k.Ops))
	}
	return strings.Join(ks, ", ")
}

// liveSlope fits the live heap against events over the workload samples
// between from and to, in bytes per 1,000 events.
func liveSlope(samples []memSample, from, to time.Duration) (float64, int) {
	var xs, ys []float64
	for _, s := range samples {
		if s.phase == "workload" && s.at >= from && s.at <= to {
			xs = append(xs, float64(s.events))
			ys = append(ys, float64(s.heapLive))
		}
	}
	n := float64(len(xs))
	if n < 2 {
		return 0, len(xs)
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, len(xs)
	}
	return (n*sxy - sx*sy) / den * 1000, len(xs)
}

func writeSamples(path string, samples []memSample) error {
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].at < samples[j].at })
	var b strings.Builder
	b.WriteString("seconds\tphase\tevents\theap_live_bytes\theap_inuse_bytes\trss_bytes\tgoroutines\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.1f\t%s\t%d\t%d\t%d\t%d\t%d\n", s.at.Seconds(), s.phase, s.events, s.heapLive, s.heapInuse, s.rss, s.goroutines)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
