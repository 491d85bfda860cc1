package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/history/simulate"
	"github.com/fencecheck/fencecheck/models"
)

// exposureSynth is the 1M-op history of the checker's "check 1M ops …
// valid" row: counting its exposures is measured beside checking it.
var exposureSynth = simulate.Synthetic{Seed: 3, Ops: 1_000_000, Keys: 10, Clients: 10, InfoRate: 0.002, PauseRate: 0.01, Fenced: true}

// exposureRows counts the exposures of a 1M-op history as a stream, in a
// child process so its peak memory is its own: the count every run, `check
// report` and `check analyze` add to a check must cost little beside it,
// and its memory must not grow with the history.
func exposureRows() []row {
	const name = "exposures of 1M ops, 10 keys, 10 clients, counted as a stream"
	self, _ := os.Executable()
	cmd := exec.Command(self, "--exposure-case")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return []row{{name: name, value: -1, unit: "s", note: "failed: " + err.Error()}}
	}
	var maxRSS int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss * 1024
	}
	// The child prints: seconds of the count alone, seconds generating and
	// counting, events, exposures.
	f := strings.Fields(string(out))
	if len(f) < 4 {
		return []row{{name: name, value: -1, unit: "s", note: "the child said: " + string(out)}}
	}
	secs, _ := strconv.ParseFloat(f[0], 64)
	return []row{
		{name: name, value: secs, unit: "s", goal: "< 5 s", pass: secs < 5,
			note: fmt.Sprintf("%s events, %s exposures; generating them too: %s s", f[2], f[3], f[1])},
		{name: name + ": peak memory (generator included)", value: float64(maxRSS) / (1 << 20), unit: "MiB", goal: "< 256 MiB", pass: maxRSS < 256<<20},
	}
}

// exposureChild is the child's side of exposureRows: the synthetic
// history's events go straight from the generator to the counter, never
// kept, and the count's own time is taken around Add alone.
func exposureChild() {
	c := models.NewExposureCounter()
	var counting time.Duration
	events := 0
	start := time.Now()
	err := exposureSynth.Events(func(e history.Event) error {
		t := time.Now()
		c.Add(e)
		counting += time.Since(t)
		events++
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	x := c.Result()
	fmt.Printf("%.3f %.3f %d %d\n", counting.Seconds(), time.Since(start).Seconds(), events, x.Exposures)
}
