package reports

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// tally compares, for the increment workload (every write stores its
// read plus one), the last value read with the writes acknowledged: the
// difference is how many updates were lost over the whole run.
func (t *teller) tally() (Step, bool) {
	var okWrites, unknown int
	var last *history.Op
	var lastWrite int64
	for _, o := range t.ops {
		if o.F == history.Write {
			lastWrite = max(lastWrite, o.Ended())
			if o.Prev == nil || o.Value == nil || *o.Value != *o.Prev+1 {
				return Step{}, false
			}
			switch o.Type {
			case history.OK:
				okWrites++
			case history.Info:
				unknown++
			}
		}
		if o.F == history.Read && o.Type == history.OK && o.Value != nil && (last == nil || o.Ended() > last.Ended()) {
			last = o
		}
	}
	if last == nil || last.Call < lastWrite || *last.Value >= int64(okWrites) {
		return Step{}, false
	}
	text := fmt.Sprintf("in the end: the last read (%s's, with token %d) returned %d, though %s of one more than the value read %s acknowledged",
		t.who(last.Process), last.Token, *last.Value, words.Plural(okWrites, "write"), plural(okWrites, "was", "were"))
	lost := int64(okWrites) - *last.Value
	text += fmt.Sprintf(": %d %s lost over the run", lost, plural(int(lost), "update was", "updates were"))
	if unknown > 0 {
		text += fmt.Sprintf(" (%d more %s an unknown outcome)", unknown, plural(unknown, "write had", "writes had"))
	}
	return Step{last.Ended(), text, "after", last.InvokeIndex}, true
}
func (t *teller) opStep(o *history.Op, role string) Step {
	who := t.who(o.Process)
	kind := role
	var text string
	switch {
	case o.F == history.Acquire && o.Type == history.OK:
		text = fmt.Sprintf("%s acquired the lease on %s with token %d", who, t.key, o.Token)
		if role == "holder" {
			if g, by := t.newestGranted(o.Ended(), o.Process); g > o.Token {
				text += fmt.Sprintf(" and believes it holds it, though token %d had already been granted to %s at %s", g, t.who(by.Process), history.Seconds(by.Ended()))
				kind = "stale"
			} else {
				text += " and believes it holds it"
			}
		}
	case o.F == history.Read && o.Type == history.OK && o.LockFree:
		text = fmt.Sprintf("%s read %s without the lock (a lock-free read: no token)", who, i64(o.Value))
	case o.F == history.Read && o.Type == history.OK:
		text = fmt.Sprintf("%s read %s with token %d", who, i64(o.Value), o.Token)
	case o.F == history.Write && o.Type == history.OK:
		text = fmt.Sprintf("%s wrote %s over %s with token %d", who, i64(o.Value), i64(o.Prev), o.Token)
	case o.F == history.Release:
		text = fmt.Sprintf("%s released the lease (%s)", who, outcome(o))
	case o.Type == history.Fail && o.Error == lockclient.ErrorFenced:
		text = fmt.Sprintf("the storage refused %s's %s with token %d as stale", who, o.F, o.Token)
	default:
		text = fmt.Sprintf("%s: %s", who, models.DescribeOp(o))
		if o.Error != "" && o.Error != lockclient.ErrorFenced {
			text += " (" + o.Error + ")"
		}
	}
	if role == "holder" && o.Type == history.OK && (o.F == history.Read || o.F == history.Write) {
		if a, by := t.newestAdmitted(o.Call, o.Process); a > o.Token {
			text += fmt.Sprintf(", a stale token: the storage had already seen token %d (%s's %s at %s)", a, t.who(by.Process), by.F, history.Seconds(by.Ended()))
			kind = "stale"
		} else if g, by := t.newestGranted(o.Call, o.Process); g > o.Token {
			text += fmt.Sprintf(", a stale token: token %d had been granted to %s at %s", g, t.who(by.Process), history.Seconds(by.Ended()))
			kind = "stale"
		}
	}
	return Step{o.Ended(), text, kind, o.InvokeIndex}
}

func (t *teller) culpritStep(c, blamed *history.Op) Step {
	who := t.who(c.Process)
	var text string
	switch {
	case c.F == history.Write && c.Type == history.OK:
		text = fmt.Sprintf("%s's write of %s over %s with token %d returned ok: the storage accepted it", who, i64(c.Value), i64(c.Prev), c.Token)
		if a, by := t.newestAdmitted(c.Ended(), c.Process); a > c.Token {
			text += fmt.Sprintf(", though by then it had admitted token %d (%s's %s at %s): a stale lease holder's write got through", a, t.who(by.Process), by.F, history.Seconds(by.Ended()))
		} else if g, by := t.newestGranted(c.Ended(), c.Process); g > c.Token {
			text += fmt.Sprintf(", though by then token %d had been granted to %s (at %s): a stale lease holder's write got through", g, t.who(by.Process), history.Seconds(by.Ended()))
		}
	case c.F == history.Read && c.Type == history.OK:
		text = fmt.Sprintf("%s read %s with token %d", who, i64(c.Value), c.Token)
		var last *history.Op
		for _, o := range t.ops {
			if o.F == history.Write && o.Type == history.OK && o.Done > 0 && o.Ended() < c.Call && (last == nil || o.Ended() > last.Ended()) {
				last = o
			}
		}
		if last != nil && last.Value != nil && c.Value != nil && *last.Value != *c.Value {
			text += fmt.Sprintf(", but %s had written %d with token %d at %s: the read saw a value the storage no longer held", t.who(last.Process), *last.Value, last.Token, history.Seconds(last.Ended()))
		} else {
			text += ": no order of the writes around it can produce that value"
		}
	case c.F == history.Acquire && c.Type == history.OK:
		text = fmt.Sprintf("%s was granted token %d on %s", who, c.Token, t.key)
		if blamed != nil && blamed.F == history.Acquire {
			text += fmt.Sprintf(", but token %d had already been granted to %s at %s: tokens must only increase", blamed.Token, t.who(blamed.Process), history.Seconds(blamed.Ended()))
		}
	case c.Type == history.Fail && c.Error == lockclient.ErrorFenced:
		a, _ := t.newestAdmitted(c.Call, c.Process)
		text = fmt.Sprintf("the storage refused %s's %s with token %d as stale, though the newest token it had admitted was %d: it fenced the current holder", who, c.F, c.Token, a)
	default:
		text = fmt.Sprintf("%s: %s, which no order of the ops allows", who, models.DescribeOp(c))
	}
	return Step{c.Ended(), text, "culprit", c.InvokeIndex}
}

// lostStep says what a culprit write overwrote.
func (t *teller) lostStep(c, over *history.Op) (Step, bool) {
	if over == nil || over.Value == nil || c.Prev == nil {
		return Step{}, false
	}
	if *over.Value == *c.Prev {
		return Step{c.Ended(), fmt.Sprintf("it overwrote %d (written by %s with token %d at %s), the value it had read",
			*over.Value, t.who(over.Process), over.Token, history.Seconds(over.Ended())), "lost", over.InvokeIndex}, true
	}
	return Step{c.Ended(), fmt.Sprintf("the storage held %d, written by %s with token %d at %s; %s overwrote it with %s, computed from its stale read of %d: %s's update is lost",
		*over.Value, t.who(over.Process), over.Token, history.Seconds(over.Ended()), t.who(c.Process), i64(c.Value), *c.Prev, t.who(over.Process)), "lost", over.InvokeIndex}, true
}

// faultSteps tells the faults that overlap [start, end]: the ones that hit
// the holder's slot always, and at most a few others.
func (t *teller) faultSteps(start, end int64, holder int) []Step {
	hslot := history.SlotOf(holder, t.slots)
	var steps []Step
	others := 0
	for _, f := range t.r.Faults {
		fe := f.End
		if fe == math.MaxInt64 {
			fe = end
		}
		if f.Start > end || fe < start {
			continue
		}
		hits := hslot != "" && slices.Contains(f.Nodes, hslot)
		if !hits && others >= 4 {
			continue
		}
		if !hits {
			others++
		}
		nodes := strings.Join(f.Nodes, ", ")
		if nodes == "" {
			nodes = "nothing named"
		}
		frozen := strings.Contains(f.F, "pause")
		var text string
		if frozen {
			text = fmt.Sprintf("the nemesis (%s) froze %s", f.F, nodes)
		} else {
			text = fmt.Sprintf("the nemesis began %s on %s", f.F, nodes)
		}
		if ctx := t.slotContext(f.Nodes, f.Start); ctx != "" {
			text += " — " + ctx
		}
		if f.Error != "" {
			text += " (" + f.Error + ")"
		}
		steps = append(steps, Step{f.Start, text, "fault", -1})
		if f.End != math.MaxInt64 && f.End <= end && f.End > f.Start {
			if frozen {
				text = fmt.Sprintf("the nemesis thawed %s after %s", nodes, history.Seconds(f.End-f.Start))
			} else {
				text = fmt.Sprintf("the nemesis healed %s on %s after %s", f.F, nodes, history.Seconds(f.End-f.Start))
			}
			steps = append(steps, Step{f.End, text, "fault", -1})
		}
	}
	return steps
}

// meanwhile sums up ops the story leaves out.
func (t *teller) meanwhile(ops []*history.Op) Step {
	procs := map[int]bool{}
	var lo, hi uint64
	var first, last *history.Op
	fenced := 0
	for _, o := range ops {
		procs[o.Process] = true
		if o.F == history.Acquire && o.Type == history.OK && o.Token != 0 {
			if lo == 0 || o.Token < lo {
				lo = o.Token
			}
			hi = max(hi, o.Token)
		}
		if o.F == history.Write && o.Type == history.OK {
			if first == nil {
				first = o
			}
			last = o
		}
		if o.Type == history.Fail && o.Error == lockclient.ErrorFenced {
			fenced++
		}
	}
	var ps []int
	for p := range procs {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	var names []string
	for i, p := range ps {
		if i == 6 {
			names = append(names, "…")
			break
		}
		names = append(names, strconv.Itoa(p))
	}
	noun := "process"
	if len(ps) > 1 {
		noun = "processes"
	}
	text := fmt.Sprintf("meanwhile: %d %s by %s %s", len(ops), plural(len(ops), "op", "ops"), noun, andList(names))
	var facts []string
	switch {
	case lo != 0 && lo == hi:
		facts = append(facts, fmt.Sprintf("token %d granted", lo))
	case lo != 0:
		facts = append(facts, fmt.Sprintf("tokens %d to %d granted", lo, hi))
	}
	if first != nil {
		facts = append(facts, fmt.Sprintf("the value went from %s to %s", i64(first.Prev), i64(last.Value)))
	}
	if fenced > 0 {
		facts = append(facts, fmt.Sprintf("%d %s refused as stale", fenced, plural(fenced, "op", "ops")))
	}
	if len(facts) > 0 {
		text += ": " + strings.Join(facts, ", ")
	}
	return Step{ops[0].Call, text, "meanwhile", -1}
}

func i64(p *int64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatInt(*p, 10)
}

func outcome(o *history.Op) string {
	switch o.Type {
	case history.OK:
		return "ok"
	case history.Fail:
		if o.Error != "" {
			return "refused: " + o.Error
		}
		return "refused"
	}
	if o.Error != "" {
		return "outcome unknown: " + o.Error
	}
	return "outcome unknown"
}
