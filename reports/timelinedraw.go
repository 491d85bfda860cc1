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
				label = history.SlotOf(l.n, d.slots)
			}
			tip = label + ": processes " + intList(laneProcs[l], 20)
		} else if s := history.SlotOf(l.n, d.slots); s != "" {
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
		ov     *models.Overlap
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
			b      *models.Belief
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
					tip = fmt.Sprintf("%s held a lease %s between %s and %s", lanes[l].String(), words.Plural(rn.n, "time"), history.Seconds(rn.t0), history.Seconds(rn.t1))
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
