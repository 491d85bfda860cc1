package reports

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/history"
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
		Caption: fmt.Sprintf("%d ops of %d processes over %.2f s.", len(r.Ops), len(d.procs), float64(d.end)/1e9)}}
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
	beliefs  []Belief
	overlaps []Overlap
	culprits map[int64]bool
	slots    int
	procs    map[int]bool
	keyColor map[string]string
	keys     []string
}

func newTimelineData(r *Run) *timelineData {
	d := &timelineData{r: r, end: max(historyEnd(r), 1), culprits: map[int64]bool{}, slots: clientSlots(r),
		procs: map[int]bool{}, keyColor: map[string]string{}}
	d.beliefs = Beliefs(r.Ops, d.end)
	d.overlaps = Overlaps(d.beliefs)
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
			if o.Key == ov.Key && o.Error == history.ErrFenced && o.Call >= t0 && o.Call <= t1 {
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

// laneKey maps a process to its lane.
type laneKey struct {
	n     int
	slots bool
}

func (d *timelineData) draw(t0, t1 int64) template.HTML {
	if t1 <= t0 {
		t1 = t0 + 1
	}
	var ops []*history.Op
	for i := range d.r.Ops {
		o := &d.r.Ops[i]
		if o.Call <= t1 && d.opEnd(o) >= t0 {
			ops = append(ops, o)
		}
	}
	var bs []*Belief
	for i := range d.beliefs {
		b := &d.beliefs[i]
		if b.Start <= t1 && b.End >= t0 {
			bs = append(bs, b)
		}
	}
	procs := map[int]bool{}
	for _, o := range ops {
		procs[o.Process] = true
	}
	for _, b := range bs {
		procs[b.Process] = true
	}
	bySlot := len(procs) > maxLanes
	laneOf := func(p int) laneKey {
		if bySlot {
			n := d.slots
			if n == 0 {
				n = maxLanes
			}
			return laneKey{p % n, true}
		}
		return laneKey{p, false}
	}
	laneProcs := map[laneKey][]int{}
	for p := range procs {
		laneProcs[laneOf(p)] = append(laneProcs[laneOf(p)], p)
	}
	var lanes []laneKey
	for l := range laneProcs {
		lanes = append(lanes, l)
		sort.Ints(laneProcs[l])
	}
	sort.Slice(lanes, func(i, j int) bool { return lanes[i].n < lanes[j].n })
	laneIndex := map[laneKey]int{}
	for i, l := range lanes {
		laneIndex[l] = i
	}

	// Rows: the nemesis, the overlaps (one per key when few), the lanes.
	var ovKeys []string
	ovRow := map[string]int{}
	if len(d.keys) <= 6 {
		ovKeys = d.keys
	} else {
		ovKeys = []string{"every key"}
	}
	for i, k := range ovKeys {
		ovRow[k] = i
	}
	const labelW, plotW, rowH = 130.0, 1150.0, 16.0
	laneH := 18.0
	if len(lanes) > 30 {
		laneH = math.Max(8, 540/float64(len(lanes)))
	}
	top := 6.0
	nemY := top
	ovY := nemY + rowH + 4
	lanesY := ovY + float64(len(ovKeys))*rowH + 6
	f := frame{left: labelW, top: lanesY, width: plotW, height: float64(len(lanes)) * laneH, t0: t0, t1: t1}
	height := lanesY + f.height + 22
	aggregate := len(ops) > maxDrawnOps
	per := f.perPixel()

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="timeline">`,
		labelW+plotW+10, height, labelW+plotW+10, height)
	// Lane backgrounds.
	for i := range lanes {
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f6f7fa"/>`, labelW, lanesY+float64(i)*laneH, plotW, laneH)
		}
	}
	f.timeAxis(&b, nemY)
	f.shadeFaults(&b, d.r.Faults, nemY+rowH, f.top+f.height)

	// Labels.
	fmt.Fprintf(&b, `<text x="4" y="%.1f" class="row">nemesis</text>`, nemY+12)
	for _, k := range ovKeys {
		fmt.Fprintf(&b, `<text x="4" y="%.1f" class="row"><title>%s</title>%s</text>`, ovY+float64(ovRow[k])*rowH+12,
			escf("intervals in which two or more processes believed they held the lease on %s at once", k), esc(truncate("two holders: "+k, 22)))
	}
	for i, l := range lanes {
		label := "process " + strconv.Itoa(l.n)
		tip := label
		if l.slots {
			label = "slot " + strconv.Itoa(l.n)
			if d.slots > 0 {
				label = slotName(d.slots, l.n)
			}
			tip = label + ": processes " + intList(laneProcs[l], 20)
		} else if s := slotName(d.slots, l.n); s != "" {
			label += " · " + s
			tip += " in client slot " + s
		}
		fmt.Fprintf(&b, `<text x="4" y="%.1f" class="lane"><title>%s</title>%s</text>`, lanesY+float64(i)*laneH+math.Min(laneH-4, 12), esc(tip), esc(label))
	}

	// The nemesis row.
	for _, ft := range d.r.Faults {
		end := ft.End
		if end == math.MaxInt64 {
			end = t1
		}
		if end < t0 || ft.Start > t1 {
			continue
		}
		x0, x1 := f.x(ft.Start), f.x(end)
		w := math.Max(x1-x0, 2)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d9a521"><title>%s</title></rect>`, x0, nemY, w, rowH-2, esc(faultText(ft)))
		label := ft.F + " " + strings.Join(ft.Nodes, ",")
		if w > float64(len(label))*6+6 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="in">%s</text>`, x0+3, nemY+11, esc(label))
		}
	}

	// Overlaps: a mark in the key's row, a red shade across the lanes.
	type span struct {
		t0, t1 int64
		n      int
		ov     *Overlap
	}
	rows := map[string][]span{}
	for i := range d.overlaps {
		ov := &d.overlaps[i]
		if ov.End < t0 || ov.Start > t1 {
			continue
		}
		row := ov.Key
		if _, ok := ovRow[row]; !ok {
			row = "every key"
		}
		ss := rows[row]
		if n := len(ss); n > 0 && ov.Start-ss[n-1].t1 < 2*per {
			ss[n-1].t1 = max(ss[n-1].t1, ov.End)
			ss[n-1].n++
		} else {
			ss = append(ss, span{ov.Start, ov.End, 1, ov})
		}
		rows[row] = ss
	}
	for _, k := range ovKeys {
		for _, s := range rows[k] {
			x0, x1 := f.x(s.t0), f.x(s.t1)
			w := math.Max(x1-x0, 2)
			tip := fmt.Sprintf("%s both believed they held the lease on %s, %s to %s", holderList(s.ov.Holders), s.ov.Key, history.Seconds(s.t0), history.Seconds(s.t1))
			if s.n > 1 {
				tip = fmt.Sprintf("%d intervals in which two or more processes believed they held the same lease, %s to %s", s.n, history.Seconds(s.t0), history.Seconds(s.t1))
			}
			fmt.Fprintf(&b, `<rect class="overlap" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
				x0, ovY+float64(ovRow[k])*rowH, w, rowH-3, colorOverlap, esc(tip))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.16"/>`, x0, lanesY, w, f.height, colorOverlap)
		}
	}

	// Lease beliefs, under each lane's ops.
	beliefY := func(l int) float64 { return lanesY + float64(l)*laneH + laneH - 5 }
	if aggregate {
		type run struct {
			t0, t1 int64
			n      int
			b      *Belief
		}
		byLane := map[int][]run{}
		for _, bl := range bs {
			l := laneIndex[laneOf(bl.Process)]
			rs := byLane[l]
			if n := len(rs); n > 0 && bl.Start-rs[n-1].t1 < 2*per {
				rs[n-1].t1 = max(rs[n-1].t1, bl.End)
				rs[n-1].n++
			} else {
				rs = append(rs, run{bl.Start, bl.End, 1, bl})
			}
			byLane[l] = rs
		}
		for l, rs := range byLane {
			for _, rn := range rs {
				tip := beliefText(rn.b)
				if rn.n > 1 {
					tip = fmt.Sprintf("%s held a lease %d times between %s and %s", lanes[l].String(), rn.n, history.Seconds(rn.t0), history.Seconds(rn.t1))
				}
				fmt.Fprintf(&b, `<rect class="belief" x="%.1f" y="%.1f" width="%.1f" height="3" fill="%s"><title>%s</title></rect>`,
					f.x(rn.t0), beliefY(l), math.Max(f.x(rn.t1)-f.x(rn.t0), 1), d.keyColor[rn.b.Key], esc(tip))
			}
		}
	} else {
		for _, bl := range bs {
			l := laneIndex[laneOf(bl.Process)]
			fmt.Fprintf(&b, `<rect class="belief" x="%.1f" y="%.1f" width="%.1f" height="3" fill="%s"><title>%s</title></rect>`,
				f.x(bl.Start), beliefY(l), math.Max(f.x(bl.End)-f.x(bl.Start), 1), d.keyColor[bl.Key], esc(beliefText(bl)))
		}
	}

	// Ops.
	barY := func(l int) float64 { return lanesY + float64(l)*laneH + 2 }
	barH := math.Max(laneH-9, 3)
	if aggregate {
		d.drawRuns(&b, f, ops, lanes, laneIndex, laneOf, barY, barH)
	}
	for _, o := range ops {
		culprit := d.culprits[o.InvokeIndex]
		if aggregate && !culprit {
			continue
		}
		l := laneIndex[laneOf(o.Process)]
		x0, x1 := f.x(o.Call), f.x(d.opEnd(o))
		stroke := ` stroke="#fff" stroke-width="0.6"`
		if culprit {
			stroke = fmt.Sprintf(` stroke="%s" stroke-width="2"`, colorCulprit)
		}
		fmt.Fprintf(&b, `<rect class="op %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s</title></rect>`,
			o.Type, x0, barY(l), math.Max(x1-x0, 1.2), barH, typeColor(o.Type), stroke, esc(opText(o)))
		if culprit {
			fmt.Fprintf(&b, `<path d="M%.1f %.1f l-4 -6 h8 z" fill="%s"><title>%s</title></path>`, math.Max(x0, x1-2), barY(l), colorCulprit, esc("cannot be linearized: "+opText(o)))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func (l laneKey) String() string {
	if l.slots {
		return "slot " + strconv.Itoa(l.n)
	}
	return "process " + strconv.Itoa(l.n)
}

// drawRuns draws each lane as runs of two-pixel bins, each coloured by
// the worst outcome of the ops that cover it.
func (d *timelineData) drawRuns(b *strings.Builder, f frame, ops []*history.Op, lanes []laneKey, laneIndex map[laneKey]int,
	laneOf func(int) laneKey, barY func(int) float64, barH float64) {
	const binW = 2.0
	n := int(math.Ceil(f.width / binW))
	bin := func(t int64) int {
		i := int((f.x(t) - f.left) / binW)
		return max(0, min(n-1, i))
	}
	prio := map[history.Type]int8{history.OK: 1, history.Fail: 2, history.Info: 3}
	state := make([][]int8, len(lanes))
	counts := make([][][3]int32, len(lanes))
	for i := range lanes {
		state[i] = make([]int8, n)
		counts[i] = make([][3]int32, n)
	}
	for _, o := range ops {
		l := laneIndex[laneOf(o.Process)]
		p := prio[o.Type]
		b0, b1 := bin(o.Call), bin(d.opEnd(o))
		for j := b0; j <= b1; j++ {
			state[l][j] = max(state[l][j], p)
		}
		counts[l][b0][p-1]++
	}
	colors := []string{"", colorOK, colorFail, colorInfo}
	for l := range lanes {
		for j := 0; j < n; {
			s := state[l][j]
			k := j
			var c [3]int32
			for k < n && state[l][k] == s {
				c[0] += counts[l][k][0]
				c[1] += counts[l][k][1]
				c[2] += counts[l][k][2]
				k++
			}
			if s > 0 {
				t0 := f.t0 + int64(float64(j)*binW/f.width*float64(f.t1-f.t0))
				t1 := f.t0 + int64(float64(k)*binW/f.width*float64(f.t1-f.t0))
				tip := fmt.Sprintf("%s: %d ops invoked between %s and %s (%d ok, %d fail, %d info)", lanes[l], c[0]+c[1]+c[2], history.Seconds(t0), history.Seconds(t1), c[0], c[1], c[2])
				fmt.Fprintf(b, `<rect class="run" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
					f.left+float64(j)*binW, barY(l), float64(k-j)*binW, barH, colors[s], esc(tip))
			}
			j = k
		}
	}
}

func beliefText(bl *Belief) string {
	return fmt.Sprintf("process %d believed it held the lease on %s with token %d, %s to %s", bl.Process, bl.Key, bl.Token, history.Seconds(bl.Start), history.Seconds(bl.End))
}

// opText describes an op for a tooltip.
func opText(o *history.Op) string {
	end := "never completed"
	if o.Done > 0 {
		end = fmt.Sprintf("%s (%.1f ms)", history.Seconds(o.Done), float64(o.Done-o.Call)/1e6)
	}
	s := fmt.Sprintf("process %d, %s: %s — %s to %s, history index %d", o.Process, o.Key, models.DescribeOp(o), history.Seconds(o.Call), end, o.InvokeIndex)
	if o.Error != "" {
		s += ", error: " + o.Error
	}
	return s
}

func intList(xs []int, most int) string {
	var parts []string
	for i, x := range xs {
		if i == most {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(xs)))
			break
		}
		parts = append(parts, strconv.Itoa(x))
	}
	return strings.Join(parts, ", ")
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
