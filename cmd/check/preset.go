package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/binomial"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/models"
)

// ciBound is the main command's one preset (harness.CIBound): the
// fastest schedule that still exposes holders faithfully, for a CI job
// that wants the tightest bound a few minutes can buy (docs/results.md, "A
// bound per minute"). Its values live in harness, where bench's
// exposure-rate group builds the same schedule as a Config.
var ciBound = harness.CIBound.Name

// runPresets are --preset's words on the main command.
var runPresets = []string{ciBound}

// applyPreset sets the preset's flags that were not given on f, so that
// the run, its results and the command that reruns it say them as if
// they had been typed. A flag given keeps its value; --nemesis cannot be
// changed, since the preset's schedule is pause-holder's.
func applyPreset(f *pflag.FlagSet, name string) error {
	switch name {
	case "":
		return nil
	case ciBound:
	default:
		return usage.Errorf("preset", "unknown preset %q (accepted: %s; compare's presets are check compare --preset's)", name, strings.Join(runPresets, ", "))
	}
	if f.Changed("nemesis") && f.Lookup("nemesis").Value.String() != harness.CIBound.Nemesis {
		return usage.Errorf("nemesis", "--preset %s counts the exposures of pause-holder, whose schedule it sets; drop --nemesis (or drop --preset and give the schedule yourself)", ciBound)
	}
	keys := harness.CIBound.Keys
	if f.Changed("keys") {
		n, err := strconv.Atoi(f.Lookup("keys").Value.String())
		if err != nil || n < 1 {
			return usage.Errorf("keys", "must be at least 1 (--preset %s freezes one holder per key)", ciBound)
		}
		keys = n
	}
	for _, v := range harness.CIBound.Flags(keys) {
		if f.Changed(v.Name) || (v.Name == "clients" && f.Changed("concurrency")) {
			continue
		}
		if err := f.Set(v.Name, v.Value); err != nil {
			return fmt.Errorf("preset %s: setting --%s %s: %w", ciBound, v.Name, v.Value, err)
		}
	}
	return nil
}

// boundPerMinute is what a ci-bound run prints after its summary: the
// exposures a minute of workload and the bound the whole run reached,
// beside the bound one minute of that rate would reach, so a CI job can
// choose its length. "" when the run counted no exposures.
func boundPerMinute(x *models.Exposures, workload time.Duration) string {
	if x == nil || workload <= 0 {
		return ""
	}
	minutes := workload.Minutes()
	rate := float64(x.Exposures) / minutes
	s := fmt.Sprintf("%s: %s in %s of workload, %.0f a minute", ciBound, words.Plural(x.Exposures, "exposure"), workloadText(workload), rate)
	if b := x.BoundText(); b != "" {
		s += "; " + b
	}
	if x.Admitted == 0 && rate >= 1 {
		perMinute := int(math.Floor(rate))
		s += fmt.Sprintf("; a minute at this rate bounds it at %s, and 1 %% needs %s", percent(binomial.Upper(0, perMinute, 0.95)), minutesFor(rate))
	}
	return s
}

// workloadText is a workload's length as the line says it: "3.0 min",
// "4.1 s".
func workloadText(d time.Duration) string {
	if d >= time.Minute {
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// minutesFor is how many minutes of workload at rate exposures a minute,
// none admitted, bound the admitted share at 1 % (95 %): 299 exposures.
func minutesFor(rate float64) string {
	n := 1
	for binomial.Upper(0, n, 0.95) > 0.01 {
		n++
	}
	return fmt.Sprintf("%d exposures (%.1f min)", n, float64(n)/rate)
}

func percent(x float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", 100*x), ".0") + " %"
}

// printBoundPerMinute writes the ci-bound line of one test to w.
func printBoundPerMinute(w io.Writer, out *harness.RunResult) {
	if out == nil {
		return
	}
	if line := boundPerMinute(out.Result.Exposures, out.Workload); line != "" {
		fmt.Fprintln(w, line)
	}
}
