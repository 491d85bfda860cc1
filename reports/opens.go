package reports

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
)

// FailedOpens counts the acquires that failed because their process's
// client could not open (history.OpenFailed: a replacement process started
// while the service was down) and the seconds they took, invoke to
// completion.
func FailedOpens(ops []history.Op) (n int, seconds float64) {
	for _, o := range ops {
		if o.F == history.Acquire && o.Type == history.Fail && strings.HasPrefix(o.Error, history.OpenFailed) {
			n++
			if o.Done > o.Call {
				seconds += float64(o.Done-o.Call) / 1e9
			}
		}
	}
	return n, seconds
}

// FailedOpensText is the summary's words for them: "12 failed opens, 8.4
// s: a replacement client could not connect (counted as failed acquires)";
// "" when there were none.
func FailedOpensText(ops []history.Op) string {
	n, s := FailedOpens(ops)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s, %.1f s: a replacement process's client could not connect, so its acquires failed until it did", words.Plural(n, "failed open"), s)
}
