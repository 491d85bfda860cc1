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
	"github.com/fencecheck/fencecheck/models"
)

// laneKey maps a process to its lane.
type laneKey struct {
	n     int
	slots bool
}

// timelineLayout is where everything of one timeline window goes: the
// lanes (a process each, or a client slot each when there are too many
// processes), the rows above them and the plot's frame.
type timelineLayout struct {
	f         frame
	lanes     []laneKey
	laneIndex map[laneKey]int
	laneProcs map[laneKey][]int
	laneOf    func(int) laneKey
	laneH     float64
	// ovKeys are the overlap rows (one per key when few, else one for
	// every key), ovRow their index.
	ovKeys            []string
	ovRow             map[string]int
	nemY, ovY, lanesY float64
	height            float64
	// aggregate: too many ops to draw one by one; per is the history
	// time one pixel stands for.
	aggregate bool
	per       int64
}

const tlLabelW, tlPlotW, tlRowH = 130.0, 1150.0, 16.0

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
	var bs []*models.Belief
	for i := range d.beliefs {
		b := &d.beliefs[i]
		if b.Start <= t1 && b.End >= t0 {
			bs = append(bs, b)
		}
	}
	l := d.layout(t0, t1, ops, bs)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="timeline">`,
		tlLabelW+tlPlotW+10, l.height, tlLabelW+tlPlotW+10, l.height)
	// Lane backgrounds.
	for i := range l.lanes {
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f6f7fa"/>`, tlLabelW, l.lanesY+float64(i)*l.laneH, tlPlotW, l.laneH)
		}
	}
	l.f.timeAxis(&b, l.nemY)
	l.f.shadeFaults(&b, d.r.Faults, l.nemY+tlRowH, l.f.top+l.f.height)
	d.drawLabels(&b, l)
	d.drawNemesis(&b, l)
	d.drawOverlaps(&b, l)
	d.drawBeliefs(&b, l, bs)
	d.drawOps(&b, l, ops)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// layout places the lanes of the processes that ops and bs name and the
// rows above them.
func (d *timelineData) layout(t0, t1 int64, ops []*history.Op, bs []*models.Belief) *timelineLayout {
	procs := map[int]bool{}
	for _, o := range ops {
		procs[o.Process] = true
	}
	for _, b := range bs {
		procs[b.Process] = true
	}
	bySlot := len(procs) > maxLanes
	l := &timelineLayout{laneProcs: map[laneKey][]int{}, laneIndex: map[laneKey]int{}, ovRow: map[string]int{}}
	l.laneOf = func(p int) laneKey {
		if bySlot {
			n := d.slots
			if n == 0 {
				n = maxLanes
			}
			return laneKey{p % n, true}
		}
		return laneKey{p, false}
	}
	for p := range procs {
		l.laneProcs[l.laneOf(p)] = append(l.laneProcs[l.laneOf(p)], p)
	}
	for k := range l.laneProcs {
		l.lanes = append(l.lanes, k)
		sort.Ints(l.laneProcs[k])
	}
	sort.Slice(l.lanes, func(i, j int) bool { return l.lanes[i].n < l.lanes[j].n })
	for i, k := range l.lanes {
		l.laneIndex[k] = i
	}

	// Rows: the nemesis, the overlaps (one per key when few), the lanes.
	if len(d.keys) <= 6 {
		l.ovKeys = d.keys
	} else {
		l.ovKeys = []string{"every key"}
	}
	for i, k := range l.ovKeys {
		l.ovRow[k] = i
	}
	l.laneH = 18.0
	if len(l.lanes) > 30 {
		l.laneH = math.Max(8, 540/float64(len(l.lanes)))
	}
	l.nemY = 6.0
	l.ovY = l.nemY + tlRowH + 4
	l.lanesY = l.ovY + float64(len(l.ovKeys))*tlRowH + 6
	l.f = frame{left: tlLabelW, top: l.lanesY, width: tlPlotW, height: float64(len(l.lanes)) * l.laneH, t0: t0, t1: t1}
	l.height = l.lanesY + l.f.height + 22
	l.aggregate = len(ops) > maxDrawnOps
	l.per = l.f.perPixel()
	return l
}

// drawLabels writes the rows' and the lanes' names.
func (d *timelineData) drawLabels(b *strings.Builder, l *timelineLayout) {
	fmt.Fprintf(b, `<text x="4" y="%.1f" class="row">nemesis</text>`, l.nemY+12)
	for _, k := range l.ovKeys {
		fmt.Fprintf(b, `<text x="4" y="%.1f" class="row"><title>%s</title>%s</text>`, l.ovY+float64(l.ovRow[k])*tlRowH+12,
			escf("intervals in which two or more processes believed they held the lease on %s at once", k), esc(truncate("two holders: "+k, 22)))
	}
	for i, lk := range l.lanes {
		label := "process " + strconv.Itoa(lk.n)
		tip := label
		if lk.slots {
			label = "slot " + strconv.Itoa(lk.n)
			if d.slots > 0 {
				label = history.SlotOf(lk.n, d.slots)
			}
			tip = label + ": processes " + intList(l.laneProcs[lk], 20)
		} else if s := history.SlotOf(lk.n, d.slots); s != "" {
			label += " · " + s
			tip += " in client slot " + s
		}
		fmt.Fprintf(b, `<text x="4" y="%.1f" class="lane"><title>%s</title>%s</text>`, l.lanesY+float64(i)*l.laneH+math.Min(l.laneH-4, 12), esc(tip), esc(label))
	}
}

// drawNemesis draws the nemesis row: a bar per fault.
func (d *timelineData) drawNemesis(b *strings.Builder, l *timelineLayout) {
	f := l.f
	for _, ft := range d.r.Faults {
		x0, x1, ok := f.faultX(ft)
		if !ok {
			continue
		}
		w := math.Max(x1-x0, 2)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d9a521"><title>%s</title></rect>`, x0, l.nemY, w, tlRowH-2, esc(faultText(ft)))
		label := ft.F + " " + strings.Join(ft.Nodes, ",")
		if w > float64(len(label))*6+6 {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="in">%s</text>`, x0+3, l.nemY+11, esc(label))
		}
	}
}

// span is intervals closer than two pixels drawn as one: from t0 to t1,
// n of them, the first of them first.
type span[T any] struct {
	t0, t1 int64
	n      int
	first  T
}

// merge adds the interval [t0, t1] of v to ss (in order of start): into
// the last span when it begins within gap of its end, else as a new one.
func merge[T any](ss []span[T], t0, t1, gap int64, v T) []span[T] {
	if n := len(ss); n > 0 && t0-ss[n-1].t1 < gap {
		ss[n-1].t1 = max(ss[n-1].t1, t1)
		ss[n-1].n++
		return ss
	}
	return append(ss, span[T]{t0, t1, 1, v})
}

// drawOverlaps draws the overlaps: a mark in the key's row, a red shade
// across the lanes.
func (d *timelineData) drawOverlaps(b *strings.Builder, l *timelineLayout) {
	f := l.f
	rows := map[string][]span[*models.Overlap]{}
	for i := range d.overlaps {
		ov := &d.overlaps[i]
		if ov.End < f.t0 || ov.Start > f.t1 {
			continue
		}
		row := ov.Key
		if _, ok := l.ovRow[row]; !ok {
			row = "every key"
		}
		rows[row] = merge(rows[row], ov.Start, ov.End, 2*l.per, ov)
	}
	for _, k := range l.ovKeys {
		for _, s := range rows[k] {
			x0, x1 := f.x(s.t0), f.x(s.t1)
			w := math.Max(x1-x0, 2)
			tip := fmt.Sprintf("%s both believed they held the lease on %s, %s to %s", holderList(s.first.Holders), s.first.Key, history.Seconds(s.t0), history.Seconds(s.t1))
			if s.n > 1 {
				tip = fmt.Sprintf("%d intervals in which two or more processes believed they held the same lease, %s to %s", s.n, history.Seconds(s.t0), history.Seconds(s.t1))
			}
			fmt.Fprintf(b, `<rect class="overlap" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
				x0, l.ovY+float64(l.ovRow[k])*tlRowH, w, tlRowH-3, colorOverlap, esc(tip))
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.16"/>`, x0, l.lanesY, w, f.height, colorOverlap)
		}
	}
}

// drawBeliefs draws the lease beliefs under each lane's ops, merged into
// runs when the ops are aggregated.
func (d *timelineData) drawBeliefs(b *strings.Builder, l *timelineLayout, bs []*models.Belief) {
	f := l.f
	beliefY := func(lane int) float64 { return l.lanesY + float64(lane)*l.laneH + l.laneH - 5 }
	if !l.aggregate {
		for _, bl := range bs {
			lane := l.laneIndex[l.laneOf(bl.Process)]
			fmt.Fprintf(b, `<rect class="belief" x="%.1f" y="%.1f" width="%.1f" height="3" fill="%s"><title>%s</title></rect>`,
				f.x(bl.Start), beliefY(lane), math.Max(f.x(bl.End)-f.x(bl.Start), 1), d.keyColor[bl.Key], esc(beliefText(bl)))
		}
		return
	}
	byLane := map[int][]span[*models.Belief]{}
	for _, bl := range bs {
		lane := l.laneIndex[l.laneOf(bl.Process)]
		byLane[lane] = merge(byLane[lane], bl.Start, bl.End, 2*l.per, bl)
	}
	for lane, rs := range byLane {
		for _, rn := range rs {
			tip := beliefText(rn.first)
			if rn.n > 1 {
				tip = fmt.Sprintf("%s held a lease %s between %s and %s", l.lanes[lane].String(), words.Plural(rn.n, "time"), history.Seconds(rn.t0), history.Seconds(rn.t1))
			}
			fmt.Fprintf(b, `<rect class="belief" x="%.1f" y="%.1f" width="%.1f" height="3" fill="%s"><title>%s</title></rect>`,
				f.x(rn.t0), beliefY(lane), math.Max(f.x(rn.t1)-f.x(rn.t0), 1), d.keyColor[rn.first.Key], esc(tip))
		}
	}
}

// drawOps draws the ops: each as a bar, or as runs of bins when there are
// too many, the culprits always one by one and marked.
func (d *timelineData) drawOps(b *strings.Builder, l *timelineLayout, ops []*history.Op) {
	f := l.f
	barY := func(lane int) float64 { return l.lanesY + float64(lane)*l.laneH + 2 }
	barH := math.Max(l.laneH-9, 3)
	if l.aggregate {
		d.drawRuns(b, f, ops, l.lanes, l.laneIndex, l.laneOf, barY, barH)
	}
	for _, o := range ops {
		culprit := d.culprits[o.InvokeIndex]
		if l.aggregate && !culprit {
			continue
		}
		lane := l.laneIndex[l.laneOf(o.Process)]
		x0, x1 := f.x(o.Call), f.x(d.opEnd(o))
		stroke := ` stroke="#fff" stroke-width="0.6"`
		if culprit {
			stroke = fmt.Sprintf(` stroke="%s" stroke-width="2"`, colorCulprit)
		}
		fmt.Fprintf(b, `<rect class="op %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s</title></rect>`,
			o.Type, x0, barY(lane), math.Max(x1-x0, 1.2), barH, typeColor(o.Type), stroke, esc(opText(o)))
		if culprit {
			fmt.Fprintf(b, `<path d="M%.1f %.1f l-4 -6 h8 z" fill="%s"><title>%s</title></path>`, math.Max(x0, x1-2), barY(lane), colorCulprit, esc("cannot be linearized: "+opText(o)))
		}
	}
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

func beliefText(bl *models.Belief) string {
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
