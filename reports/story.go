package reports

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// Step is one line of an anomaly's story.
type Step struct {
	Time  int64  `json:"time"`
	Text  string `json:"text"`
	Kind  string `json:"kind"` // acquire, read, write, fault, culprit
	Index int64  `json:"index"`
}

// Story tells an invalid key's anomaly from the history itself, the way
// the seed tells it: who held which token, when the fault hit, who took
// over, which stale op was admitted and what it overwrote. It covers the
// window from the stale holder's acquire to the culprit's completion.
func Story(r *Run, k *models.KeyResult) []Step {
	if k.Verdict != models.Invalid || len(k.Culprits) == 0 {
		return nil
	}
	byInvoke := map[int64]*history.Op{}
	for i := range r.Ops {
		byInvoke[r.Ops[i].InvokeIndex] = &r.Ops[i]
	}
	culprit := byInvoke[k.Culprits[0]]
	if culprit == nil {
		return nil
	}
	// The stale holder's acquire: its last ok acquire on the key before
	// the culprit.
	var from *history.Op
	for i := range r.Ops {
		o := &r.Ops[i]
		if o.Key == k.Key && o.Process == culprit.Process && o.F == history.Acquire && o.Type == history.OK && o.Call <= culprit.Call {
			from = o
		}
	}
	start := culprit.Call
	if from != nil {
		start = from.Call
	}
	end := culprit.Done
	if end == 0 {
		end = culprit.Call
	}
	var steps []Step
	for i := range r.Ops {
		o := &r.Ops[i]
		if o.Key != k.Key || o.Call < start || o.Call > end || o.Type != history.OK && o != culprit {
			continue
		}
		at := o.Done
		if at == 0 {
			at = o.Call
		}
		who := fmt.Sprintf("process %d", o.Process)
		switch {
		case o == culprit:
			steps = append(steps, Step{at, fmt.Sprintf("%s's %s was admitted by the storage: %s", who, models.DescribeOp(o), k.Explanation), "culprit", o.InvokeIndex})
		case o.F == history.Acquire:
			steps = append(steps, Step{at, fmt.Sprintf("%s acquired the lease on %s with token %d", who, o.Key, o.Token), "acquire", o.InvokeIndex})
		case o.F == history.Read:
			steps = append(steps, Step{at, fmt.Sprintf("%s read %d with token %d", who, *o.Value, o.Token), "read", o.InvokeIndex})
		case o.F == history.Write:
			steps = append(steps, Step{at, fmt.Sprintf("%s wrote %d over %d with token %d", who, *o.Value, *o.Prev, o.Token), "write", o.InvokeIndex})
		}
	}
	for _, f := range r.Faults {
		if f.Start <= end && f.End >= start {
			steps = append(steps, Step{f.Start, fmt.Sprintf("the nemesis started %s on %s", f.F, strings.Join(f.Nodes, ", ")), "fault", -1})
			if f.End <= end {
				steps = append(steps, Step{f.End, fmt.Sprintf("the nemesis healed %s on %s", f.F, strings.Join(f.Nodes, ", ")), "fault", -1})
			}
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Time < steps[j].Time })
	// Long windows: keep the first and last steps, and every fault and
	// step of the stale process, so the story stays readable.
	if len(steps) > 40 {
		var kept []Step
		for i, s := range steps {
			if i < 10 || i >= len(steps)-10 || s.Kind == "fault" || s.Kind == "culprit" ||
				strings.HasPrefix(s.Text, fmt.Sprintf("process %d ", culprit.Process)) {
				kept = append(kept, s)
			}
		}
		steps = kept
	}
	return steps
}
