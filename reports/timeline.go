package reports

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/history"
)

// Timeline draws one lane per process: each op a bar (ok, fail and info in
// distinct colours), the time each process believed it held a lease as a
// band under its ops, and the fault intervals shaded across every lane.
// Long histories are windowed to the ops around the first culprit so the
// file stays small and the picture readable.
func Timeline(r *Run) template.HTML {
	ops := r.Ops
	if len(ops) == 0 {
		return template.HTML(`<p class="note">No operations were recorded.</p>`)
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, o := range ops {
		lo = min(lo, o.Call)
		hi = max(hi, o.Call, o.Done)
	}
	note := ""
	const maxOps = 3000
	if len(ops) > maxOps {
		center := ops[len(ops)/2].Call
		for _, k := range r.Result.Keys {
			if len(k.Culprits) > 0 {
				for _, o := range ops {
					if o.InvokeIndex == k.Culprits[0] {
						center = o.Call
					}
				}
				break
			}
		}
		// Find the window of maxOps ops around center.
		i := sort.Search(len(ops), func(i int) bool { return ops[i].Call >= center })
		a := max(0, i-maxOps/2)
		b := min(len(ops), a+maxOps)
		ops = ops[a:b]
		lo, hi = ops[0].Call, ops[len(ops)-1].Call
		for _, o := range ops {
			hi = max(hi, o.Done)
		}
		note = fmt.Sprintf(`<p class="note">Showing %d of %d ops, from %.2f s to %.2f s (around the first anomaly).</p>`, len(ops), len(r.Ops), float64(lo)/1e9, float64(hi)/1e9)
	}
	if hi <= lo {
		hi = lo + 1
	}
	procs := map[int]bool{}
	for _, o := range ops {
		procs[o.Process] = true
	}
	var lanes []int
	for p := range procs {
		lanes = append(lanes, p)
	}
	sort.Ints(lanes)
	lane := map[int]int{}
	for i, p := range lanes {
		lane[p] = i
	}
	const left, width, laneH = 90, 1100, 22
	height := len(lanes)*laneH + 30
	x := func(t int64) float64 { return left + float64(t-lo)/float64(hi-lo)*width }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="timeline">`, left+width+20, height)
	for _, f := range r.Faults {
		end := f.End
		if end == math.MaxInt64 {
			end = hi
		}
		if end < lo || f.Start > hi {
			continue
		}
		x0, x1 := x(max(f.Start, lo)), x(min(end, hi))
		fmt.Fprintf(&b, `<rect x="%.1f" y="0" width="%.1f" height="%d" fill="#fde2c8" opacity="0.7"><title>%s</title></rect>`,
			x0, math.Max(x1-x0, 1), height-20, template.HTMLEscapeString(fmt.Sprintf("%s %v %.3f–%.3f s %s", f.F, f.Nodes, float64(f.Start)/1e9, float64(end)/1e9, f.Error)))
	}
	for i, p := range lanes {
		fmt.Fprintf(&b, `<text x="4" y="%d">process %d</text>`, i*laneH+15, p)
	}
	// Lease beliefs: from an ok acquire to the end of the process's
	// release (or its last op on the key).
	type belief struct {
		start, end int64
		token      uint64
	}
	open := map[int]*belief{}
	drawBelief := func(p int, bl *belief) {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="4" fill="#7aa7e0"><title>process %d believes it holds token %d</title></rect>`,
			x(bl.start), lane[p]*laneH+17, math.Max(x(bl.end)-x(bl.start), 1), p, bl.token)
	}
	for _, o := range ops {
		end := o.Done
		if end == 0 {
			end = hi
		}
		if o.F == history.Acquire && o.Type == history.OK {
			open[o.Process] = &belief{start: end, end: end, token: o.Token}
		}
		if bl := open[o.Process]; bl != nil {
			bl.end = end
			if o.F == history.Release || o.Type == history.Info {
				drawBelief(o.Process, bl)
				delete(open, o.Process)
			}
		}
		color := map[history.Type]string{history.OK: "#4caf50", history.Fail: "#ef6c00", history.Info: "#9e9e9e"}[o.Type]
		stroke := ""
		for _, k := range r.Result.Keys {
			for _, c := range k.Culprits {
				if c == o.InvokeIndex {
					stroke = ` stroke="#c62828" stroke-width="2"`
				}
			}
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="12" fill="%s"%s><title>%s</title></rect>`,
			x(o.Call), lane[o.Process]*laneH+4, math.Max(x(end)-x(o.Call), 1.5), color, stroke,
			template.HTMLEscapeString(fmt.Sprintf("process %d %s %s: %s (%.3f–%.3f s) %s", o.Process, o.Key, o.F, o.Type, float64(o.Call)/1e9, float64(end)/1e9, o.Error)))
	}
	for p, bl := range open {
		drawBelief(p, bl)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">%.2f s</text><text x="%d" y="%d" text-anchor="end">%.2f s</text>`,
		left, height-5, float64(lo)/1e9, left+width, height-5, float64(hi)/1e9)
	b.WriteString(`</svg>`)
	legend := `<p class="note">Bars: <span style="color:#4caf50">■ ok</span> <span style="color:#ef6c00">■ fail</span> <span style="color:#9e9e9e">■ info</span> · <span style="color:#7aa7e0">▬ believes it holds the lease</span> · <span style="color:#e0a060">■ fault</span> · red outline: the ops that cannot be linearized</p>`
	return template.HTML(note + b.String() + legend)
}
