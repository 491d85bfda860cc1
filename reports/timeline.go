package reports

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// Drawing is one figure of the report.
type Drawing struct {
	ID      string
	Title   string
	Caption string
	SVG     template.HTML
}

// Limits that keep the report small and readable on any history.
const (
	// maxDrawnOps: past this many ops in view, a timeline draws each
	// lane as runs of pixels coloured by the worst outcome in them.
	maxDrawnOps = 2500
	// maxFocusOps bounds the ops in a close view.
	maxFocusOps = 1500
	// maxLanes: past this many processes, lanes are client slots.
	maxLanes = 60
)

// Timelines draws the whole run and, when there is one, a closer view of
// where it matters: the first anomaly (from the stale holder's acquire to
// the culprit, and a close-up of its last moments), else the first time
// two processes believed they held the same lease, else the first fault.
//
// Each timeline has one lane per process: each op a bar (ok, fail, info in
// distinct colours, the culprits outlined in red), under it the intervals
// in which the process believed it held a lease; the fault intervals are
// shaded across every lane and named in the nemesis row, and the intervals
// in which two processes believed they held the same key's lease are
// shaded red across every lane and marked in a row of their own.
func Timelines(r *Run) []Drawing {
	if len(r.Ops) == 0 {
		return nil
	}
	d := newTimelineData(r)
	out := []Drawing{{ID: "timeline", Title: "The whole run", SVG: d.draw(0, d.end),
		Caption: fmt.Sprintf("%s of %s over %.2f s.", words.Plural(len(r.Ops), "op"), words.Plural(len(d.procs), "process"), float64(d.end)/1e9)}}
	if len(r.Ops) > maxDrawnOps {
		out[0].Caption += " Too many ops to draw one by one: each lane shows runs of ops, coloured by the worst outcome among them (info over fail over ok); hover for counts."
	}
	for _, w := range d.focus() {
		out = append(out, Drawing{ID: w.id, Title: w.title, Caption: w.caption, SVG: d.draw(w.t0, w.t1)})
	}
	return out
}

type timelineData struct {
	r        *Run
	end      int64
	beliefs  []models.Belief
	overlaps []models.Overlap
	culprits map[int64]bool
	slots    int
	procs    map[int]bool
	keyColor map[string]string
	keys     []string
}

func newTimelineData(r *Run) *timelineData {
	d := &timelineData{r: r, end: max(r.End(), 1), culprits: map[int64]bool{}, slots: clientSlots(r),
		procs: map[int]bool{}, keyColor: map[string]string{}}
	d.beliefs = models.Beliefs(r.Ops, d.end)
	d.overlaps = models.Overlaps(d.beliefs)
	for _, k := range r.Result.Keys {
		for _, c := range k.Culprits {
			d.culprits[c] = true
		}
	}
	for i := range r.Ops {
		d.procs[r.Ops[i].Process] = true
	}
	d.keys = sortedKeys(r.Ops)
	for i, k := range d.keys {
		d.keyColor[k] = keyColors[i%len(keyColors)]
	}
	return d
}

type window struct {
	id, title, caption string
	t0, t1             int64
}

// pad widens [t0, t1] by a fraction of its span (at least min ns) each side.
func pad(t0, t1 int64, frac float64, least int64) (int64, int64) {
	p := max(int64(float64(t1-t0)*frac), least)
	return max(0, t0-p), t1 + p
}

// opEnd is where an op's bar ends: its completion, or the end of the
// history when it never completed.
func (d *timelineData) opEnd(o *history.Op) int64 {
	if o.Done > 0 {
		return o.Done
	}
	return d.end
}

// narrow moves t0 forward until at most maxFocusOps ops start in
// [t0, t1].
func (d *timelineData) narrow(t0, t1 int64) int64 {
	var calls []int64
	for i := range d.r.Ops {
		if c := d.r.Ops[i].Call; c >= t0 && c <= t1 {
			calls = append(calls, c)
		}
	}
	if len(calls) <= maxFocusOps {
		return t0
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i] < calls[j] })
	return calls[len(calls)-maxFocusOps]
}

func (d *timelineData) focus() []window {
	r := d.r
	byInvoke := map[int64]*history.Op{}
	for i := range r.Ops {
		byInvoke[r.Ops[i].InvokeIndex] = &r.Ops[i]
	}
	for _, k := range r.Result.Keys {
		if k.Verdict != models.Invalid || len(k.Culprits) == 0 {
			continue
		}
		c := byInvoke[k.Culprits[0]]
		if c == nil {
			continue
		}
		var acq *history.Op
		for i := range r.Ops {
			o := &r.Ops[i]
			if o.Key == c.Key && o.Process == c.Process && o.F == history.Acquire && o.Type == history.OK && o.Call <= c.Call && o != c {
				acq = o
			}
		}
		t0, t1 := c.Call, c.Ended()
		if acq != nil {
			t0 = acq.Call
		}
		t0, t1 = pad(t0, t1, 0.04, 5e6)
		t0 = d.narrow(t0, t1)
		caption := fmt.Sprintf("Key %s, from process %d's acquire to the op that cannot be linearized (outlined in red).", c.Key, c.Process)
		out := []window{{"timeline-anomaly", "The anomaly on " + c.Key, caption, t0, t1}}
		// A close-up: the culprit and the ops completed just before it.
		var dones []int64
		for i := range r.Ops {
			if dn := r.Ops[i].Done; dn > 0 && dn < c.Done {
				dones = append(dones, r.Ops[i].Call)
			}
		}
		sort.Slice(dones, func(i, j int) bool { return dones[i] < dones[j] })
		if n := len(dones); n > 30 {
			c0, c1 := pad(dones[n-30], c.Ended(), 0.1, 1e6)
			if c0 > t0 {
				out = append(out, window{"timeline-closeup", "Close-up of its last moments", fmt.Sprintf("The ops around process %d's %s, %.3f s to %.3f s.", c.Process, c.F, float64(c0)/1e9, float64(c1)/1e9), c0, c1})
			}
		}
		return out
	}
	if len(d.overlaps) > 0 {
		ov := d.overlaps[0]
		t0, t1 := pad(ov.Start, ov.End, 2, 20e6)
		t0 = d.narrow(t0, t1)
		fenced := 0
		for i := range r.Ops {
			o := &r.Ops[i]
			if o.Key == ov.Key && o.Error == lockclient.ErrorFenced && o.Call >= t0 && o.Call <= t1 {
				fenced++
			}
		}
		caption := fmt.Sprintf("%s believed they held the lease on %s at once from %s to %s.", capitalize(holderList(ov.Holders)), ov.Key, history.Seconds(ov.Start), history.Seconds(ov.End))
		if fenced > 0 {
			caption += fmt.Sprintf(" The storage refused %d %s with a stale token here.", fenced, plural(fenced, "op", "ops"))
		}
		return []window{{"timeline-overlap", "The first broken mutual exclusion", caption, t0, t1}}
	}
	for _, f := range r.Faults {
		end := f.End
		if end == math.MaxInt64 || end <= f.Start {
			continue
		}
		t0, t1 := pad(f.Start, end, 0.1, 20e6)
		t0 = d.narrow(t0, t1)
		return []window{{"timeline-fault", "The first fault", faultText(f), t0, t1}}
	}
	return nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// holderList renders holders as "process 1 (token 58) and process 2 (token 112)".
func holderList(hs []models.Holder) string {
	s := ""
	for i, h := range hs {
		switch {
		case i == 0:
		case i == len(hs)-1:
			s += " and "
		default:
			s += ", "
		}
		s += "process " + strconv.Itoa(h.Process)
		if h.Token != 0 {
			s += " (token " + strconv.FormatUint(h.Token, 10) + ")"
		}
	}
	return s
}
