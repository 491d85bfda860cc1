package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compare"
	"github.com/fencecheck/fencecheck/compare/result"
)

// parallelOptions is the parallel group: one comparison run at each width,
// same preset, same seed, warm clusters, one after the other in this
// process, so that the widths are measured side by side on the same
// machine in the same hour.
type parallelOptions struct {
	presets   []string
	widths    []int
	runs      int
	timeLimit time.Duration // 0: the preset's own
	seed      int64
}

// parallelSample is what one comparison at one width gave.
type parallelSample struct {
	width    int
	wall     float64
	load     [2]string // 1-minute load average at start and end
	verdicts map[string]string
	lost     []float64 // the trusting unfenced cell's lost shares, one per run
	err      error
}

// parallelRows runs every preset at every width and compares each width
// with the first (normally 1): wall time, every cell's verdict tally, and
// the lost share of updates where a cell has one.
func parallelRows(o parallelOptions) []row {
	var rows []row
	for _, preset := range o.presets {
		var samples []parallelSample
		for _, w := range o.widths {
			s := parallelSampleAt(preset, w, o)
			fmt.Fprintf(os.Stderr, "bench: %s at --parallel %d: %.0f s, load %s -> %s\n", preset, w, s.wall, s.load[0], s.load[1])
			if s.err != nil {
				rows = append(rows, failedRow(fmt.Sprintf("%s at --parallel %d", preset, w), s.err))
				continue
			}
			samples = append(samples, s)
		}
		rows = append(rows, parallelCompareRows(preset, samples)...)
	}
	return rows
}

func parallelSampleAt(preset string, width int, o parallelOptions) parallelSample {
	spec := compare.Spec{Preset: preset, Seed: o.seed, Runs: o.runs, TimeLimit: o.timeLimit, Parallel: width}
	s := parallelSample{width: width, load: [2]string{loadAverage(), ""}}
	m, err := compare.Expand(spec)
	if err != nil {
		s.err = err
		return s
	}
	dir := tempStore()
	defer os.RemoveAll(dir)
	start := time.Now()
	c, err := compare.Run(quiet(), m, dir, nil)
	s.wall = time.Since(start).Seconds()
	s.load[1] = loadAverage()
	if err == nil && c.Errors > 0 {
		err = fmt.Errorf("%d runs could not be carried out", c.Errors)
	}
	if err != nil {
		s.err = err
		return s
	}
	s.verdicts, s.lost = cellVerdicts(c)
	return s
}

// cellVerdicts names each cell and its verdict tally ("invalid 3, valid
// 0"), and returns the lost shares (lower bounds) of the cell that lost
// the most, by median (the trusting unfenced row, in jepsen-etcd).
func cellVerdicts(c *result.Comparison) (map[string]string, []float64) {
	out := map[string]string{}
	var lost []float64
	most := -1.0
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			if cell.NotApplicable != "" {
				continue
			}
			name := fmt.Sprintf("%s %s %s %s × %s", r.Backend, r.Recipe, r.Storage, r.Fencing, cell.Fault)
			var parts []string
			for v, n := range cell.Verdicts {
				if n > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", v, n))
				}
			}
			sort.Strings(parts)
			out[name] = strings.Join(parts, ", ")
			if cell.MedianLostShare != nil && *cell.MedianLostShare > most {
				most, lost = *cell.MedianLostShare, nil
				for _, run := range cell.Runs {
					if run.LostShareMin != nil {
						lost = append(lost, *run.LostShareMin)
					}
				}
			}
		}
	}
	return out, lost
}

func parallelCompareRows(preset string, samples []parallelSample) []row {
	if len(samples) == 0 {
		return nil
	}
	base := samples[0]
	var rows []row
	for _, s := range samples {
		note := fmt.Sprintf("load %s -> %s", s.load[0], s.load[1])
		rows = append(rows, row{name: fmt.Sprintf("%s at --parallel %d: wall time", preset, s.width), value: s.wall, unit: "s", goal: "measured", pass: true, note: note})
		if s.width == base.width {
			continue
		}
		share := s.wall / base.wall * 100
		goal, pass := "measured", true
		if preset == "jepsen-etcd" {
			goal, pass = "<= 45%", share <= 45
		}
		rows = append(rows, row{name: fmt.Sprintf("%s at --parallel %d: share of --parallel %d's time", preset, s.width, base.width), value: share, unit: "%", goal: goal, pass: pass})
		var differ []string
		for cell, v := range base.verdicts {
			if s.verdicts[cell] != v {
				differ = append(differ, fmt.Sprintf("%s: %s, was %s", cell, s.verdicts[cell], v))
			}
		}
		sort.Strings(differ)
		rows = append(rows, row{name: fmt.Sprintf("%s at --parallel %d: cells whose verdicts differ from --parallel %d", preset, s.width, base.width),
			value: float64(len(differ)), unit: "cells", goal: "0", pass: len(differ) == 0, note: strings.Join(differ, "; ")})
		if len(base.lost) > 0 && len(s.lost) > 0 {
			lo, hi := minMax(base.lost)
			m := median(s.lost)
			rows = append(rows, row{name: fmt.Sprintf("%s at --parallel %d: lost share of updates, median", preset, s.width),
				value: m * 100, unit: "%", goal: fmt.Sprintf("in %.1f–%.1f %%", lo*100, hi*100), pass: m >= lo && m <= hi,
				note: fmt.Sprintf("--parallel %d: median %.1f %%; this width's runs %s", base.width, median(base.lost)*100, percentList(s.lost))})
		}
	}
	for cell, v := range base.verdicts {
		fmt.Fprintf(os.Stderr, "bench: %s at --parallel %d: %s: %s\n", preset, base.width, cell, v)
	}
	return rows
}

func minMax(xs []float64) (float64, float64) {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func percentList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x*100)
	}
	return strings.Join(parts, ", ") + " %"
}

// loadAverage is the machine's 1-minute load average, or "?" where
// /proc/loadavg cannot be read: a side-by-side number means little
// without it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
