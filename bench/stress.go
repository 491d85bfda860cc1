package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/meminfo"
	"github.com/fencecheck/fencecheck/models"
)

// The stress group runs the targeted pause on etcd back to back while the
// machine is loaded beside it, as a machine shared with other work is: a
// CPU burner per core, a disk writer and a memory hog that leaves a few GiB
// free. A run must neither hang nor end unknown: the pause-holder run is
// the one that once froze a client whose unpause the starved daemon did
// not answer for 16 minutes.
//
// The pressure runs in child processes of this binary (bench --stress-child
// cpu|disk|mem), so it competes with the harness and the Docker daemon as
// another program would, and it dies with the bench: each child gets
// SIGKILL when its parent dies (PR_SET_PDEATHSIG), and the bench kills them
// and removes the disk writer's directory when it ends or is interrupted.

// stressOptions are the group's flags.
type stressOptions struct {
	runs      int
	timeLimit time.Duration
	leave     int64 // bytes the memory hog leaves available
	hogMax    int64 // bytes the hog may hold at most (0: no cap)
	diskFiles int   // files the disk writer rotates through
	diskFile  int64 // bytes per file
}

// stressChild runs one kind of pressure until it is killed.
func stressChild(kind string, args []string) {
	switch kind {
	case "cpu":
		x := uint64(1)
		for {
			x = x*6364136223846793005 + 1442695040888963407
			if x == 0 {
				fmt.Println(x)
			}
		}
	case "disk":
		dir, files, size := args[0], atoi(args[1]), int64(atoi(args[2]))
		buf := make([]byte, 1<<20)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		for i := 0; ; i = (i + 1) % files {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("w%d", i)))
			if err != nil {
				fmt.Fprintln(os.Stderr, "disk writer:", err)
				os.Exit(1)
			}
			for n := int64(0); n < size; n += int64(len(buf)) {
				if _, err := f.Write(buf); err != nil {
					break // a full disk: try again with the next file
				}
			}
			f.Sync()
			f.Close()
		}
	case "mem":
		memHog(int64(atoi(args[0])), int64(atoi(args[1])))
	}
	fmt.Fprintf(os.Stderr, "unknown stress child %q\n", kind)
	os.Exit(2)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bad number %q\n", s)
		os.Exit(2)
	}
	return n
}

// memAvailable is MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (int64, error) { return meminfo.Field("MemAvailable") }

// memHog holds as much memory as leaves `leave` bytes available (at most
// max bytes when max > 0), every page touched so that it is really
// resident, and follows the machine: when others need memory it gives some
// back, when memory frees up it takes it. It prints what it holds each
// time that changes.
func memHog(leave, max int64) {
	const chunk = 64 << 20
	var held [][]byte
	size := func() int64 { return int64(len(held)) * chunk }
	for {
		avail, err := memAvailable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "memory hog:", err)
			os.Exit(1)
		}
		changed := false
		switch {
		case avail < leave-chunk && len(held) > 0:
			for avail < leave && len(held) > 0 {
				held = held[:len(held)-1]
				avail += chunk
			}
			debug.FreeOSMemory()
			changed = true
		case avail > leave+chunk && (max <= 0 || size()+chunk <= max):
			for avail > leave+chunk && (max <= 0 || size()+chunk <= max) {
				b := make([]byte, chunk)
				for i := 0; i < len(b); i += 4096 {
					b[i] = 1
				}
				held = append(held, b)
				avail -= chunk
			}
			changed = true
		}
		if changed {
			fmt.Printf("%d\n", size())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// pressure is the running children.
type pressure struct {
	cmds    []*exec.Cmd
	diskDir string
	mu      sync.Mutex
	hogMax  int64 // the most the hog held
}

func startPressure(o stressOptions) (*pressure, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &pressure{}
	start := func(args ...string) (*exec.Cmd, error) {
		cmd := exec.Command(self, append([]string{"--stress-child"}, args...)...)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
		return cmd, nil
	}
	for i := 0; i < runtime.NumCPU(); i++ {
		cmd, _ := start("cpu")
		if err := cmd.Start(); err != nil {
			p.stop()
			return nil, err
		}
		p.cmds = append(p.cmds, cmd)
	}
	p.diskDir, err = os.MkdirTemp("", "fencecheck-stress-disk")
	if err != nil {
		p.stop()
		return nil, err
	}
	cmd, _ := start("disk", p.diskDir, strconv.Itoa(o.diskFiles), strconv.FormatInt(o.diskFile, 10))
	if err := cmd.Start(); err != nil {
		p.stop()
		return nil, err
	}
	p.cmds = append(p.cmds, cmd)
	cmd, _ = start("mem", strconv.FormatInt(o.leave, 10), strconv.FormatInt(o.hogMax, 10))
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.stop()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		p.stop()
		return nil, err
	}
	p.cmds = append(p.cmds, cmd)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
				p.mu.Lock()
				p.hogMax = max(p.hogMax, n)
				p.mu.Unlock()
			}
		}
	}()
	return p, nil
}

// stop kills every child, waits for it and removes the disk writer's files.
func (p *pressure) stop() {
	for _, c := range p.cmds {
		if c.Process != nil {
			c.Process.Kill()
		}
	}
	for _, c := range p.cmds {
		if c.Process != nil {
			c.Wait()
		}
	}
	p.cmds = nil
	if p.diskDir != "" {
		os.RemoveAll(p.diskDir)
	}
}

func (p *pressure) hogPeak() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hogMax
}

// stressRows runs the group and returns a row per run and the summary.
func stressRows(o stressOptions) []row {
	title := fmt.Sprintf("stress: etcd, pause-holder, fencing all, %s runs under CPU, disk and memory pressure", o.timeLimit)
	if err := imagePresent(); err != nil {
		return []row{failedRow(title, err)}
	}
	// The first interrupt stops the run going on (it heals, checks and
	// tears down) and the rest; the pressure stops either way.
	stopCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	p, err := startPressure(o)
	if err != nil {
		return []row{failedRow(title, fmt.Errorf("starting the pressure: %w", err))}
	}
	defer p.stop()
	avail0, _ := memAvailable()
	fmt.Fprintf(os.Stderr, "stress: %d CPU burners, a disk writer (%d × %d MiB in %s), a memory hog leaving %.1f GiB (MemAvailable now %.1f GiB); %d runs\n",
		runtime.NumCPU(), o.diskFiles, o.diskFile>>20, p.diskDir, float64(o.leave)/(1<<30), float64(avail0)/(1<<30), o.runs)

	hangAfter := 3 * o.timeLimit
	var rows []row
	var walls []float64
	hangs, unknowns, errs, ran := 0, 0, 0, 0
	for i := 0; i < o.runs && stopCtx.Err() == nil; i++ {
		cfg := dockerEtcdConfig()
		cfg.Nemesis, cfg.TimeLimit, cfg.NemesisInterval = []string{"pause-holder"}, o.timeLimit, 2*time.Second
		cfg.Seed = int64(5000 + i)
		// A run that outlives ten times its limit is stopped as an
		// interrupt would (it still heals and tears down): the bench
		// must end, and the row says it hung.
		runStop, cancelRun := context.WithTimeout(stopCtx, 10*o.timeLimit)
		start := time.Now()
		out, runErr := harness.Run(harness.Signals{Stop: runStop, Abort: context.Background()}, cfg, nil)
		wall := time.Since(start)
		cancelRun()
		os.RemoveAll(cfg.Store)
		ran++
		verdict := "error"
		if out != nil {
			verdict = string(out.Result.Verdict)
		}
		hung := wall > hangAfter
		note := verdict
		switch {
		case runErr != nil:
			errs++
			note += ": " + oneLine(runErr.Error(), 200)
		case out.Result.Verdict != models.Valid:
			note += ": " + oneLine(out.Result.Explanation, 200)
		}
		if verdict != string(models.Valid) && verdict != string(models.Invalid) {
			unknowns++ // unknown, or a run that could not be carried out
		}
		if hung {
			hangs++
			note = "HUNG: " + note
		}
		walls = append(walls, wall.Seconds())
		rows = append(rows, row{name: fmt.Sprintf("stress run %02d (seed %d): wall time", i+1, cfg.Seed), value: wall.Seconds(), unit: "s",
			goal: fmt.Sprintf("< %s, valid", hangAfter), pass: !hung && verdict == string(models.Valid), note: note})
		avail, _ := memAvailable()
		fmt.Fprintf(os.Stderr, "stress: run %d/%d %s in %.1f s (MemAvailable %.1f GiB, hog peak %.1f GiB)\n",
			i+1, o.runs, note, wall.Seconds(), float64(avail)/(1<<30), float64(p.hogPeak())/(1<<30))
	}
	interrupted := ""
	if stopCtx.Err() != nil {
		interrupted = fmt.Sprintf("; interrupted after %d of %d runs", ran, o.runs)
	}
	rows = append(rows,
		row{name: "stress: runs", value: float64(ran), unit: "", goal: fmt.Sprintf("%d", o.runs), pass: ran == o.runs,
			note: fmt.Sprintf("%d CPU burners, disk writer %d × %d MiB, memory hog peak %.1f GiB leaving %.1f GiB%s",
				runtime.NumCPU(), o.diskFiles, o.diskFile>>20, float64(p.hogPeak())/(1<<30), float64(o.leave)/(1<<30), interrupted)},
		row{name: "stress: hangs (wall time > 3 × time limit)", value: float64(hangs), unit: "", goal: "0", pass: hangs == 0},
		row{name: "stress: unknown verdicts (or could not be carried out)", value: float64(unknowns), unit: "", goal: "0", pass: unknowns == 0,
			note: fmt.Sprintf("%d could not be carried out", errs)},
	)
	if len(walls) > 0 {
		sort.Float64s(walls)
		rows = append(rows, row{name: "stress: wall time, median", value: walls[len(walls)/2], unit: "s", goal: "measured", pass: true,
			note: fmt.Sprintf("min %.1f s, max %.1f s", walls[0], walls[len(walls)-1])})
	}
	return rows
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}
