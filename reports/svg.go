package reports

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/fencecheck/fencecheck/history"
)

// Colours shared by the timeline and the plots.
const (
	colorOK      = "#3a9d5d"
	colorFail    = "#e6762e"
	colorInfo    = "#8e8e8e"
	colorFault   = "#f3d98b"
	colorOverlap = "#d62728"
	colorBelief  = "#4c78c8"
	colorCulprit = "#b71c1c"
)

// fColors colour the client fs in the plots.
var fColors = map[string]string{
	history.Acquire: "#1f77b4",
	history.Read:    "#2ca02c",
	history.Write:   "#9467bd",
	history.Release: "#8c564b",
}

// keyColors tell keys apart in the lease bands.
var keyColors = []string{colorBelief, "#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#ff7f0e", "#8c564b", "#2ca02c"}

func fColor(f string) string {
	if c, ok := fColors[f]; ok {
		return c
	}
	return "#444"
}

func typeColor(t history.Type) string {
	switch t {
	case history.OK:
		return colorOK
	case history.Fail:
		return colorFail
	}
	return colorInfo
}

// clean makes a string from a client, a server or a file safe to escape:
// valid UTF-8, with control characters (other than tab and newline)
// replaced, so nothing odd reaches the page.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r < 0xa0)
}

// esc escapes text for an SVG element or attribute inside HTML.
func esc(s string) string { return template.HTMLEscapeString(clean(s)) }

// escf is esc(fmt.Sprintf(...)).
func escf(format string, args ...any) string { return esc(fmt.Sprintf(format, args...)) }

// frame is a plot area over an interval of history time.
type frame struct {
	left, top, width, height float64
	t0, t1                   int64
}

func (f frame) x(t int64) float64 {
	t = max(min(t, f.t1), f.t0)
	return f.left + float64(t-f.t0)/float64(f.t1-f.t0)*f.width
}

// perPixel is the history time one pixel stands for.
func (f frame) perPixel() int64 { return max(1, int64(float64(f.t1-f.t0)/f.width)) }

// niceStep is a 1, 2 or 5 times a power of ten near span/n.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// fmtSecs formats a tick label with as many decimals as the step needs.
func fmtSecs(s, step float64) string {
	d := 0
	for step < 1 && d < 6 {
		step *= 10
		d++
	}
	return fmt.Sprintf("%.*f s", d, s)
}

// timeAxis draws vertical grid lines and labels under the frame.
func (f frame) timeAxis(b *strings.Builder, gridTop float64) {
	span := float64(f.t1-f.t0) / 1e9
	step := niceStep(span, 10)
	first := math.Ceil(float64(f.t0)/1e9/step) * step
	bottom := f.top + f.height
	fmt.Fprintf(b, `<g class="axis">`)
	for s := first; s <= float64(f.t1)/1e9+step/1e6; s += step {
		x := f.x(int64(s * 1e9))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e5ec"/>`, x, gridTop, x, bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, bottom+13, fmtSecs(s, step))
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#99a"/>`, f.left, bottom, f.left+f.width, bottom)
	b.WriteString(`</g>`)
}

// faultX is a fault's interval on the frame's x axis, a fault never
// healed running to the frame's end; ok is false when the fault lies
// outside the frame, so nothing of it is drawn.
func (f frame) faultX(ft history.Fault) (x0, x1 float64, ok bool) {
	end := ft.End
	if end == math.MaxInt64 {
		end = f.t1
	}
	if end < f.t0 || ft.Start > f.t1 {
		return 0, 0, false
	}
	return f.x(ft.Start), f.x(end), true
}

// shadeFaults shades each fault interval from y0 to y1, with a tooltip.
func (f frame) shadeFaults(b *strings.Builder, faults []history.Fault, y0, y1 float64) {
	for _, ft := range faults {
		x0, x1, ok := f.faultX(ft)
		if !ok {
			continue
		}
		fmt.Fprintf(b, `<rect class="fault" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.45"><title>%s</title></rect>`,
			x0, y0, math.Max(x1-x0, 1.5), y1-y0, colorFault, esc(faultText(ft)))
	}
}

// faultText describes a fault interval for a tooltip.
func faultText(ft history.Fault) string {
	s := fmt.Sprintf("nemesis %s on %s, %s", ft.F, strings.Join(ft.Nodes, ", "), history.Seconds(ft.Start))
	if ft.End == math.MaxInt64 {
		s += " until the end of the history (never healed)"
	} else if ft.End > ft.Start {
		s += fmt.Sprintf(" to %s (%s)", history.Seconds(ft.End), history.Seconds(ft.End-ft.Start))
	}
	if ft.Error != "" {
		s += ": " + ft.Error
	}
	return s
}
