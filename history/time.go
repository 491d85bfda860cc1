package history

import (
	"fmt"
	"math"
)

// Ended is when the op ended as the history records it: the client's own
// reading of the answer when it has one (what the checker orders ops by,
// so every report, figure and summary agrees with the verdict), else when
// the harness recorded the completion (an info op: when the client gave
// up), else its invocation when the run ended first.
func (o *Op) Ended() int64 {
	if o.Type != Info && o.Return > 0 && o.Return != math.MaxInt64 {
		return o.Return
	}
	if o.Done > 0 {
		return o.Done
	}
	return o.Call
}

// Seconds prints a history time (nanoseconds since the workload started),
// or a span of history time, as seconds with two decimals: "4.03 s".
// math.MaxInt64, the time of an outcome that never came, is "an unknown
// time".
func Seconds(t int64) string {
	if t == math.MaxInt64 {
		return "an unknown time"
	}
	return fmt.Sprintf("%.2f s", float64(t)/1e9)
}
