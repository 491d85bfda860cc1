package main

import (
	"bytes"
	"fmt"
	"github.com/fencecheck/fencecheck/runstore"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The long run's memory watch: sampling the harness's own heap and RSS
// while a run goes, and judging whether it stayed flat.

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
			w.counter.path = runstore.Run(w.dir).History()
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

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

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
