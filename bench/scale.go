package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/history/simulate"
	"github.com/fencecheck/fencecheck/internal/units"
	"github.com/fencecheck/fencecheck/runstore"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// The checker at soak scale: long histories written to a file as they are
// generated, then checked from the file in a child process (so its peak
// memory is its own) by the streaming checker (what check analyze does)
// and, where it is safe, by the whole-key search that came before it
// (read the whole history, pair it, hand porcupine each key at once).

type scaleShape struct {
	name  string
	synth simulate.Synthetic
	// goals by op count: time and peak memory (0: measured only).
	goal    map[int]time.Duration
	memGoal map[int]int64
	note    string
}

var scaleShapes = []scaleShape{
	{name: "1 key, 5 clients taking turns", synth: simulate.Synthetic{Seed: 21, Keys: 1, Clients: 5, Fenced: true},
		goal: map[int]time.Duration{1_000_000: 20 * time.Second, 10_000_000: 3 * time.Minute}, memGoal: map[int]int64{1_000_000: 1 << 30, 10_000_000: 2 << 30}},
	{name: "1 key, 20 clients, 2% info", synth: simulate.Synthetic{Seed: 22, Keys: 1, Clients: 20, InfoRate: 0.02, PauseRate: 0.01, Fenced: true},
		goal: map[int]time.Duration{1_000_000: 20 * time.Second, 10_000_000: 3 * time.Minute}, memGoal: map[int]int64{1_000_000: 1 << 30, 10_000_000: 2 << 30}},
	{name: "10 keys, 10 clients", synth: simulate.Synthetic{Seed: 23, Keys: 10, Clients: 10, InfoRate: 0.002, PauseRate: 0.01, Fenced: true},
		goal: map[int]time.Duration{10_000_000: time.Minute}, memGoal: map[int]int64{10_000_000: 2 << 30}},
	{name: "1 key, 20 clients, 2% info, no tokens", synth: simulate.Synthetic{Seed: 24, Keys: 1, Clients: 20, InfoRate: 0.02, Fenced: true, NoTokens: true},
		note: "no tokens: unknown writes stay open to the end (no quiescent cut after the first); the cost is the open writes looked up by the value they replace"},
}

// oldPathCap is the most the whole-key search may be expected to need for
// it to run here; above, its row says it was skipped. Its check runs with
// a bound a little above, so a wrong estimate stops it, not the machine.
const oldPathCap = 3 << 30

// oldPathNeeds estimates the whole-key search's peak memory: porcupine
// keeps a bitset of the key's ops per step, so each key costs about
// 0.04 bytes × ops² (measured: 147k ops on one key, 0.8 GB), keys in
// parallel up to the cores; plus about 1.5 KB per op for the history
// held whole.
func oldPathNeeds(s simulate.Synthetic, ops int) int64 {
	perKey := float64(ops) / float64(s.Keys)
	parallel := float64(min(s.Keys, runtime.GOMAXPROCS(0)))
	return int64(0.04*perKey*perKey*parallel + 1500*float64(ops))
}

func scaleRows(sizes []int, memory int64) []row {
	dir, err := os.MkdirTemp("", "fencecheck-scale-")
	if err != nil {
		return []row{{name: "checker at scale", value: -1, note: "failed: " + err.Error()}}
	}
	defer os.RemoveAll(dir)
	var rows []row
	for _, sh := range scaleShapes {
		for _, n := range sizes {
			s := sh.synth
			s.Ops = n
			path := runstore.Run(dir).History()
			start := time.Now()
			size, err := writeHistory(path, s)
			name := fmt.Sprintf("check %s ops, %s", count(n), sh.name)
			if err != nil {
				rows = append(rows, row{name: name, value: -1, unit: "s", note: "failed writing the history: " + err.Error()})
				continue
			}
			fmt.Fprintf(os.Stderr, "bench: %s: history of %d MB written in %s\n", name, size>>20, time.Since(start).Round(time.Second))
			rows = append(rows, checkFileRow(name+": streaming", path, "new", n, memory, sh.goal[n], sh.memGoal[n], sh.note))
			// Safe means under the cap and under half of what the machine
			// has free right now (it is shared).
			limit := int64(oldPathCap)
			if avail, _ := memAvailable(); avail > 0 {
				limit = min(limit, avail/2)
			}
			if need := oldPathNeeds(s, n); need > limit {
				rows = append(rows, row{name: name + ": whole-key search (before)", value: 0, unit: "s", goal: "measured", pass: true,
					note: fmt.Sprintf("skipped: it would need about %s (> %s here)", units.FormatBytes(need), units.FormatBytes(limit))})
			} else {
				rows = append(rows, checkFileRow(name+": whole-key search (before)", path, "old", n, limit+limit/4, 0, 0, ""))
			}
			os.Remove(path)
		}
	}
	return rows
}

func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

// writeHistory writes the simulation's history without holding it.
func writeHistory(path string, s simulate.Synthetic) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	err = s.Events(func(e history.Event) error {
		line, err = e.AppendJSON(line[:0])
		if err != nil {
			return err
		}
		w.Write(line)
		return w.WriteByte('\n')
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	st, _ := os.Stat(path)
	if st != nil {
		return st.Size(), err
	}
	return 0, err
}

// checkFileRow checks path in a child process and reports its time, peak
// memory, ops per second and bytes per op.
func checkFileRow(name, path, which string, ops int, memory int64, goal time.Duration, memGoal int64, note string) row {
	self, _ := os.Executable()
	cmd := exec.Command(self, "--check-file", path, "--check-path", which, "--check-memory-bytes", strconv.FormatInt(memory, 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	r := row{name: name, unit: "s", goal: "measured", pass: true}
	if err != nil {
		r.value, r.pass, r.note = -1, false, "failed: "+err.Error()
		return r
	}
	// The child prints: peak-bytes seconds verdict explanation... Its
	// own peak (VmHWM), since the rusage of a child starts from its
	// parent's high-water mark at the fork.
	f := strings.SplitN(strings.TrimSpace(string(out)), " ", 4)
	if len(f) < 3 {
		r.value, r.pass, r.note = -1, false, "failed: "+string(out)
		return r
	}
	maxRSS, _ := strconv.ParseInt(f[0], 10, 64)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && maxRSS == 0 {
		maxRSS = ru.Maxrss * 1024
	}
	f = f[1:]
	secs, _ := strconv.ParseFloat(f[0], 64)
	verdict := f[1]
	r.value = secs
	r.note = fmt.Sprintf("verdict %s; peak %d MiB; %.0f ops/s; %.0f bytes/op", verdict, maxRSS>>20, float64(ops)/secs, float64(maxRSS)/float64(ops))
	if verdict != string(models.Valid) && len(f) > 2 {
		r.note += "; " + f[2]
	}
	if goal > 0 {
		r.goal = fmt.Sprintf("< %s, < %s", units.FormatDuration(goal), units.FormatBytes(memGoal))
		r.pass = secs < goal.Seconds() && maxRSS < memGoal && verdict == string(models.Valid)
	}
	if note != "" {
		r.note += "; " + note
	}
	return r
}

// checkFileChild is the child's side of checkFileRow.
func checkFileChild(path, which string, memory int64) {
	start := time.Now()
	var res models.Result
	opts := models.Options{MemoryLimit: memory, VisualizeMaxOps: 1, Timeout: 20 * time.Minute}
	switch which {
	case "new":
		f, err := os.Open(path)
		if err != nil {
			fmt.Println("0 0 failed", err)
			return
		}
		res, _, err = models.CheckReader(context.Background(), f, opts)
		f.Close()
		if err != nil {
			fmt.Println("0 0 failed", err)
			return
		}
	default:
		events, err := history.ParseFile(path)
		if err != nil {
			fmt.Println("0 0 failed", err)
			return
		}
		ops, _ := history.Pair(events)
		events = nil
		res = models.CheckWhole(context.Background(), ops, opts)
	}
	fmt.Printf("%d %.3f %s %s\n", peakRSS(), time.Since(start).Seconds(), res.Verdict, res.Explanation)
}

// peakRSS is this process's own peak resident memory (VmHWM), 0 when
// unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
