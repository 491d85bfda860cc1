package models

import (
	"fmt"
	"math"
	"slices"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
)

// A crash (a kill, a failpoint, a power cut: Crash) can lose what a
// server acknowledged, and the loss shows only when the lock service
// grants the lock again after the crashed server is back: the later
// grant then hands out the lost grant's token a second time, or a lower
// one (contradiction.go). A run whose service granted nothing after a
// crash passes whatever that crash lost. So a run counts, for each crash,
// its grants after the crash:
//
//   - A crash is the interval of a crash fault in the history, from its
//     start (the server stopped, or the failpoint armed) to its end (the
//     server started again, or the failpoint disarmed). A fault that
//     found nothing to hit, or whose start failed, is no crash.
//   - A grant after it is an ok acquire called after the crash ended and
//     before the next crash began, of a key that had a grant
//     acknowledged before the crash began: one the crash could have lost
//     and this one could contradict.
//   - A failpoint counts as a crash whether or not its action took a
//     server down (the history records the arming and the disarming; the
//     panic itself is in check.log): a failpoint that never fired is
//     counted as a crash that lost nothing, which only makes the rule
//     stricter.
//
// A valid verdict needs at least one grant after some crash, as a run
// under a power fault needs a post-cut grant (WithCrashes): a run that
// granted nothing after any crash is unknown. Whether every crash was
// followed by one (Crashes.EachGranted) is reported beside it, and is
// what `check compare --preset known-bugs` holds a fixed release's valid
// runs to.

// CrashSpan is one crash of a run.
type CrashSpan struct {
	Fault string   `json:"fault"`
	Nodes []string `json:"nodes,omitempty"`
	// Start and End are when the crash began and ended (ns); End is
	// math.MaxInt64 when the history never ended it.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// GrantsAfter counts the grants after the crash and before the next.
	GrantsAfter int `json:"grants_after"`
	// went is when a power cut's power went (0: not a power cut, or not
	// known): what it could lose was acknowledged before then.
	went int64
}

// Crashes are a run's crashes and the grants after them.
type Crashes struct {
	// Made counts the crashes; WithoutGrant those the service granted
	// nothing after.
	Made         int `json:"made"`
	WithoutGrant int `json:"without_grant"`
	// GrantsAfter sums the crashes' grants after.
	GrantsAfter int         `json:"grants_after"`
	Spans       []CrashSpan `json:"spans"`
}

// CountCrashes counts the crashes of a run from its ops and fault
// intervals, with the power faults' drops as the faults reported them
// (nil: not recorded); nil when the history holds no crash.
//
// A power cut's recorded start can come up to a second before its power
// went (a one-instant cut records its start first): a grant acknowledged
// in between was acknowledged before the crash, and the crash could lose
// it, so a power cut's grants before are counted up to when its power
// went (Drop.Went), as its post-cut grants are (postcut.go). Without it,
// CI's etcd power-loss-all run whose first grant came back between the
// two was unknown, with 3 post-cut grants beside it.
func CountCrashes(ops []history.Op, faults []history.Fault, drops []Drop) *Crashes {
	c := &Crashes{}
	went := map[int]int64{} // by index in c.Spans
	next := map[string]int{}
	for _, f := range faults {
		if !Crash(f.F) || (f.Start == f.End && f.Error != "") {
			continue // not a crash, or one that found nothing or failed
		}
		if PowerFault(f.F) {
			if d, ok := nthDrop(drops, f.F, next[f.F]); ok && d.Went > f.Start {
				went[len(c.Spans)] = d.Went
			}
			next[f.F]++
		}
		c.Spans = append(c.Spans, CrashSpan{Fault: f.F, Nodes: f.Nodes, Start: f.Start, End: f.End, went: went[len(c.Spans)]})
	}
	if len(c.Spans) == 0 {
		return nil
	}
	slices.SortStableFunc(c.Spans, func(a, b CrashSpan) int { return cmpInt64(a.Start, b.Start) })
	c.Made = len(c.Spans)
	for i := range c.Spans {
		s := &c.Spans[i]
		next := int64(math.MaxInt64)
		for _, o := range c.Spans[i+1:] {
			if o.Start > s.Start {
				next = o.Start
				break
			}
		}
		for _, o := range ops {
			if o.F != history.Acquire || o.Type != history.OK || o.Call <= s.End || o.Call >= next {
				continue
			}
			if grantedBefore(ops, o.Key, max(s.Start, s.went)) {
				s.GrantsAfter++
			}
		}
		c.GrantsAfter += s.GrantsAfter
		if s.GrantsAfter == 0 {
			c.WithoutGrant++
		}
	}
	return c
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// EachGranted says whether the service granted the lock after every
// crash: only then can the run tell whether any of them lost a grant.
func (c *Crashes) EachGranted() bool { return c != nil && c.Made > 0 && c.WithoutGrant == 0 }

// Unproven says why a valid run under crashes cannot stand: the service
// granted nothing after any of them, or (each) after one of them. "" when
// it granted after some (each: after every one).
func (c *Crashes) Unproven(each bool) string {
	if c == nil {
		return ""
	}
	if each && c.GrantsAfter > 0 && c.WithoutGrant > 0 {
		for _, sp := range c.Spans {
			if sp.GrantsAfter == 0 {
				return fmt.Sprintf("the service granted nothing after the crash at %s (%s), one of %s, and the run asked for a grant after each (--grant-after-each-crash): a grant that crash lost could not be contradicted",
					secs(sp.Start), faultText(history.Fault{F: sp.Fault, Nodes: sp.Nodes}), words.Plural(c.Made, "crash"))
			}
		}
	}
	if c.GrantsAfter > 0 {
		return ""
	}
	first := c.Spans[0]
	what := faultText(history.Fault{F: first.Fault, Nodes: first.Nodes})
	if c.Made == 1 {
		return fmt.Sprintf("the service granted nothing after the crash (%s at %s): a grant it lost could not be contradicted, so the run cannot tell whether it lost one", what, secs(first.Start))
	}
	return fmt.Sprintf("the service granted nothing after any of its %d crashes (the first, %s at %s): a grant they lost could not be contradicted, so the run cannot tell whether they lost one", c.Made, what, secs(first.Start))
}

// Text is the crashes in one clause: "3 crashes, each followed by a
// grant (57 grants after)"; "3 crashes, 1 not followed by a grant (the
// one at 12.30 s); 20 grants after".
func (c *Crashes) Text() string {
	s := words.Plural(c.Made, "crash")
	if c.WithoutGrant == 0 {
		return fmt.Sprintf("%s, each followed by a grant (%s after)", s, words.Plural(c.GrantsAfter, "grant"))
	}
	var at []string
	for _, sp := range c.Spans {
		if sp.GrantsAfter == 0 {
			at = append(at, secs(sp.Start))
		}
	}
	return fmt.Sprintf("%s, %d not followed by a grant (begun at %s); %s after the others", s, c.WithoutGrant, words.List(at), words.Plural(c.GrantsAfter, "grant"))
}

// WithCrashes attaches a run's crashes to its result and holds a valid
// verdict to them: a run that granted nothing after any crash (each:
// after one of them) is unknown (Unproven). A verdict that is not valid
// stays as it is.
func (res Result) WithCrashes(c *Crashes, each bool) Result {
	if c == nil {
		return res
	}
	res.Crashes = c
	if res.Verdict != Valid {
		return res
	}
	if why := c.Unproven(each); why != "" {
		res.Verdict, res.Explanation = Unknown, why
	}
	return res
}
