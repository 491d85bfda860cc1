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
)

// maxPoints bounds the marks of the latency plot: past it, ops that fall
// in the same few pixels of the same series are drawn as one mark.
const maxPoints = 12000

var plotFs = []string{history.Acquire, history.Read, history.Write, history.Release}
var plotTypes = []history.Type{history.OK, history.Fail, history.Info}

// sortedFs lists the client fs present, in workload order.
func sortedFs(ops []history.Op) []string {
	seen := map[string]bool{}
	for i := range ops {
		seen[ops[i].F] = true
	}
	var out []string
	for _, f := range plotFs {
		if seen[f] {
			out = append(out, f)
			delete(seen, f)
		}
	}
	var rest []string
	for f := range seen {
		rest = append(rest, f)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// marker draws one latency mark: a dot for ok, a cross for fail, a hollow
// triangle for info.
func marker(b *strings.Builder, t history.Type, x, y float64, color, title string) {
	switch t {
	case history.OK:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.2" fill="%s"><title>%s</title></circle>`, x, y, color, title)
	case history.Fail:
		fmt.Fprintf(b, `<path d="M%.1f %.1fl5 5m0 -5l-5 5" stroke="%s" stroke-width="1.6"><title>%s</title></path>`, x-2.5, y-2.5, color, title)
	default:
		fmt.Fprintf(b, `<path d="M%.1f %.1fl3 5h-6z" fill="none" stroke="%s" stroke-width="1.3"><title>%s</title></path>`, x, y-3, color, title)
	}
}

// Latency is Jepsen's latency-raw plot: every op a mark at its invocation
// time and its latency (log scale), coloured by f, shaped by outcome, the
// fault intervals shaded. Ops never completed are drawn at the top. On
// large histories, ops that share a few pixels of one series share a mark.
func Latency(r *Run) Drawing {
	d := Drawing{ID: "latency", Title: "Latency"}
	end := max(r.End(), 1e6)
	const left, width, top, height = 70.0, 1200.0, 10.0, 300.0
	f := frame{left: left, top: top, width: width, height: height, t0: 0, t1: end}
	s := newLatencyScale(r.Ops, top, height)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="%.0f" height="%.0f" role="img" aria-label="latency">`, left+width+10, top+height+46)
	f.timeAxis(&b, top)
	f.shadeFaults(&b, r.Faults, top, top+height)
	s.axis(&b, left, width)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" class="note">never</text>`, left-5, s.unknownY+4)
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">latency (ms, log scale)</text>`, top+height/2)

	marks, cell := latencyMarks(r.Ops, f, s)
	if cell > 1 {
		d.Caption = fmt.Sprintf("%s; ops of the same f and outcome within %.0f pixels share a mark (hover for counts).", words.Plural(len(r.Ops), "op"), cell)
	} else {
		d.Caption = fmt.Sprintf("%s, each a mark at its invocation.", words.Plural(len(r.Ops), "op"))
	}
	for _, m := range marks {
		marker(&b, m.t, float64(m.cx)/10, float64(m.cy)/10, fColor(m.f), esc(m.tip()))
	}
	b.WriteString(`</svg>`)
	d.SVG = template.HTML(b.String())
	return d
}

// latencyScale is the latency plot's y axis: powers of ten around the
// ops' latencies in ms, log scale, with a row at the top (unknownY) for
// the ops that never completed.
type latencyScale struct {
	ylo, yhi float64
	unknownY float64
	plotTop  float64
	height   float64 // of the plot, the never row included
}

func newLatencyScale(ops []history.Op, top, height float64) latencyScale {
	lo, hi := math.Inf(1), 0.0
	for i := range ops {
		if o := &ops[i]; o.Done > 0 {
			ms := math.Max(float64(o.Ended()-o.Call)/1e6, 0.001)
			lo, hi = math.Min(lo, ms), math.Max(hi, ms)
		}
	}
	if hi == 0 {
		lo, hi = 0.1, 1000
	}
	return latencyScale{
		ylo:      pow10(int(math.Floor(math.Log10(lo)))),
		yhi:      pow10(int(math.Ceil(math.Log10(hi) + 0.01))),
		unknownY: top + 4,
		plotTop:  top + 22,
		height:   height,
	}
}

// y is the plot's y of a latency in ms (below the axis's floor: at it).
func (s latencyScale) y(ms float64) float64 {
	ms = math.Max(ms, s.ylo)
	return s.plotTop + (s.height-22)*(1-(math.Log10(ms)-math.Log10(s.ylo))/(math.Log10(s.yhi)-math.Log10(s.ylo)))
}

// axis draws a grid line and label per decade, and at 2 and 5 times each
// when there are three decades or fewer, so a narrow range still reads.
func (s latencyScale) axis(b *strings.Builder, left, width float64) {
	decades := int(math.Round(math.Log10(s.yhi) - math.Log10(s.ylo)))
	for e := 0; e <= decades; e++ {
		v := pow10(int(math.Round(math.Log10(s.ylo))) + e)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e5ec"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`,
			left, s.y(v), left+width, s.y(v), left-5, s.y(v)+4, fmtMs(v))
		if decades <= 3 && e < decades {
			for _, m := range []float64{2, 5} {
				fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f0f1f5"/><text x="%.1f" y="%.1f" text-anchor="end" class="note">%s</text>`,
					left, s.y(v*m), left+width, s.y(v*m), left-5, s.y(v*m)+4, fmtMs(v*m))
			}
		}
	}
}

// latencyMark is one mark of the latency plot: one op, or the ops of one f
// and outcome that fall in the same cell.
type latencyMark struct {
	f       string
	t       history.Type
	cx, cy  int // tenths of a pixel
	n       int
	o       *history.Op // the first op in the mark
	minMs   float64
	maxMs   float64
	t0, t1  int64
	unknown bool
}

// tip is the mark's hover text: the op itself, or what the ops it stands
// for have in common.
func (m *latencyMark) tip() string {
	switch {
	case m.n == 1:
		return opText(m.o)
	case m.unknown:
		return fmt.Sprintf("%d %s ops (%s) invoked %s to %s, never completed", m.n, m.f, m.t, history.Seconds(m.t0), history.Seconds(m.t1))
	default:
		return fmt.Sprintf("%d %s ops (%s) invoked %s to %s, %.2f to %.2f ms", m.n, m.f, m.t, history.Seconds(m.t0), history.Seconds(m.t1), m.minMs, m.maxMs)
	}
}

// latencyMarks places the ops, merging those of the same f and outcome in
// the same cell; the cell doubles from one pixel until there are at most
// maxPoints marks or it is 16 pixels wide. It returns the cell used.
func latencyMarks(ops []history.Op, f frame, s latencyScale) ([]*latencyMark, float64) {
	type markKey struct {
		f      string
		t      history.Type
		cx, cy int
	}
	cell := 1.0
	var marks []*latencyMark
	for {
		idx := map[markKey]*latencyMark{}
		marks = marks[:0]
		for i := range ops {
			o := &ops[i]
			x := f.x(o.Call)
			ms := float64(o.Ended()-o.Call) / 1e6
			yy := s.unknownY
			unknown := o.Done == 0
			if !unknown {
				yy = s.y(ms)
			}
			k := markKey{o.F, o.Type, int(x / cell), int(yy / cell)}
			m := idx[k]
			if m == nil {
				m = &latencyMark{f: o.F, t: o.Type, cx: int(x*10 + 0.5), cy: int(yy*10 + 0.5), o: o, minMs: ms, maxMs: ms, t0: o.Call, t1: o.Call, unknown: unknown}
				idx[k] = m
				marks = append(marks, m)
			}
			m.n++
			m.minMs, m.maxMs = math.Min(m.minMs, ms), math.Max(m.maxMs, ms)
			m.t0, m.t1 = min(m.t0, o.Call), max(m.t1, o.Call)
		}
		if len(marks) <= maxPoints || cell >= 16 {
			break
		}
		cell *= 2
	}
	return marks, cell
}

// fmtMs labels a latency axis tick given in milliseconds.
func fmtMs(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " ms"
}

// Throughput is Jepsen's rate plot: completions per second over time, one
// line per f and outcome (solid ok, dashed fail, dotted info), the fault
// intervals shaded. Hovering a column gives every rate in it.
func Throughput(r *Run) Drawing {
	d := Drawing{ID: "throughput", Title: "Throughput"}
	end := max(r.End(), 1e6)
	const left, width, top, height = 70.0, 1200.0, 10.0, 220.0
	f := frame{left: left, top: top, width: width, height: height, t0: 0, t1: end}
	step := niceStep(float64(end)/1e9, 60)
	binNs := max(1, int64(step*1e9))
	nb := int(end/binNs) + 1
	fs := sortedFs(r.Ops)
	type series struct {
		f string
		t history.Type
	}
	counts := map[series][]int{}
	for i := range r.Ops {
		o := &r.Ops[i]
		if o.Done == 0 {
			continue
		}
		s := series{o.F, o.Type}
		if counts[s] == nil {
			counts[s] = make([]int, nb)
		}
		counts[s][min(int(o.Done/binNs), nb-1)]++
	}
	peak := 1.0
	for _, c := range counts {
		for _, n := range c {
			peak = math.Max(peak, float64(n)/step)
		}
	}
	ymax := niceStep(peak, 5) * 5
	for ymax/5 >= peak && ymax > 1 {
		ymax -= niceStep(peak, 5)
	}
	ymax = math.Max(ymax, peak)
	y := func(v float64) float64 { return top + height*(1-v/ymax) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="%.0f" height="%.0f" role="img" aria-label="throughput">`, left+width+10, top+height+46)
	f.timeAxis(&b, top)
	f.shadeFaults(&b, r.Faults, top, top+height)
	ys := niceStep(ymax, 5)
	for v := 0.0; v <= ymax+1e-9; v += ys {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e5ec"/><text x="%.1f" y="%.1f" text-anchor="end">%g</text>`,
			left, y(v), left+width, y(v), left-5, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">ops/s</text>`, top+height/2)
	dash := map[history.Type]string{history.OK: "", history.Fail: ` stroke-dasharray="5 3"`, history.Info: ` stroke-dasharray="1.5 2.5"`}
	xc := func(i int) float64 { return f.x(min(int64(i)*binNs+binNs/2, end)) }
	for _, fn := range fs {
		for _, t := range plotTypes {
			c := counts[series{fn, t}]
			if c == nil {
				continue
			}
			var pts strings.Builder
			for i, n := range c {
				fmt.Fprintf(&pts, "%.1f,%.1f ", xc(i), y(float64(n)/step))
			}
			fmt.Fprintf(&b, `<polyline class="rate" points="%s" fill="none" stroke="%s" stroke-width="1.4"%s><title>%s</title></polyline>`,
				strings.TrimSpace(pts.String()), fColor(fn), dash[t], esc(fn+" "+string(t)))
		}
	}
	// Hover columns.
	for i := 0; i < nb; i++ {
		var parts []string
		for _, fn := range fs {
			for _, t := range plotTypes {
				if c := counts[series{fn, t}]; c != nil && c[i] > 0 {
					parts = append(parts, fmt.Sprintf("%s %s %.0f/s", fn, t, float64(c[i])/step))
				}
			}
		}
		if len(parts) == 0 {
			parts = []string{"no completions"}
		}
		x0, x1 := f.x(int64(i)*binNs), f.x(min(int64(i+1)*binNs, end))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.2f" height="%.1f" fill="transparent"><title>%s</title></rect>`,
			x0, top, math.Max(x1-x0, 0.5), height, esc(fmt.Sprintf("%.3f–%.3f s: %s", float64(i)*step, float64(i+1)*step, strings.Join(parts, ", "))))
	}
	b.WriteString(`</svg>`)
	d.SVG = template.HTML(b.String())
	d.Caption = fmt.Sprintf("Completions per second in %s bins.", strings.TrimSuffix(fmtSecs(step, step), " s")+" s")
	return d
}

// legendFs is the legend of the plots' colours, for the template.
func legendFs(ops []history.Op) []struct{ F, Color string } {
	var out []struct{ F, Color string }
	for _, f := range sortedFs(ops) {
		out = append(out, struct{ F, Color string }{clean(f), fColor(f)})
	}
	return out
}

// pow10 is 10^e, exact for the decades a latency axis uses.
func pow10(e int) float64 {
	v, _ := strconv.ParseFloat("1e"+strconv.Itoa(e), 64)
	return v
}
