package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// Step is one line of an anomaly's story.
type Step struct {
	Time int64  `json:"time"`
	Text string `json:"text"`
	// Kind says what the step is, for its colour: op (an ordinary op),
	// holder (an op of the process that ends up stale), stale (one of its
	// ops that carried an already superseded token), takeover (the first
	// grant of a newer token), fault, meanwhile (a summary of ops left
	// out), culprit (the op that cannot be linearized), lost (what it
	// overwrote), after (what the next read saw).
	Kind string `json:"kind"`
	// Index is the history index of the op's invocation; -1 for faults
	// and summaries.
	Index int64 `json:"index"`
}

// maxInterleaved bounds the other processes' ops told one by one between
// the stale holder's last op and the culprit.
const maxInterleaved = 5

// Story tells an invalid key's anomaly from the history itself, step by
// step: who held which token, when the fault hit, who took
// over, which stale op was admitted and what it overwrote. It covers the
// window from the stale holder's acquire to the culprit's completion; the
// ops in that window that are not part of the story are summed up in
// "meanwhile" steps so the story stays a page long on any history.
func Story(r *Run, k *models.KeyResult) []Step {
	if k.Verdict != models.Invalid || len(k.Culprits) == 0 {
		return nil
	}
	t := newTeller(r, k.Key)
	c := t.byInvoke[k.Culprits[0]]
	if c == nil {
		return nil
	}
	var blamed *history.Op
	if len(k.Culprits) > 1 {
		blamed = t.byInvoke[k.Culprits[1]]
	}
	// The stale holder's acquire: its last ok acquire on the key before
	// the culprit.
	var acq *history.Op
	if c.F != history.Acquire {
		for _, o := range t.ops {
			if o.Process == c.Process && o.F == history.Acquire && o.Type == history.OK && o.Call <= c.Call {
				acq = o
			}
		}
	}
	start, end := c.Call, c.Ended()
	if acq != nil {
		start = acq.Call
	}
	if blamed != nil {
		start = min(start, blamed.Call)
	}

	// The ops told one by one.
	named := map[*history.Op]string{c: "culprit"}
	if blamed != nil {
		named[blamed] = "op"
	}
	var lastHolder *history.Op // the holder's op just before the culprit
	for _, o := range t.ops {
		if o.Process == c.Process && o != c && o.Call >= start && o.Call <= end {
			named[o] = "holder"
			lastHolder = o
		}
	}
	var takeover *history.Op
	if acq != nil {
		for _, o := range t.ops {
			if o.Process != c.Process && o.F == history.Acquire && o.Type == history.OK && o.Token > acq.Token &&
				o.Ended() >= acq.Call && (takeover == nil || o.Ended() < takeover.Ended()) {
				takeover = o
			}
		}
		if takeover != nil && takeover.Ended() <= end {
			named[takeover] = "takeover"
			start = min(start, takeover.Call)
		} else {
			takeover = nil
		}
	}
	var over *history.Op // the last write acknowledged before a culprit write
	if c.F == history.Write && c.Type == history.OK {
		for _, o := range t.ops {
			if o.Process != c.Process && o.F == history.Write && o.Type == history.OK && o.Done > 0 && o.Ended() < c.Ended() &&
				(over == nil || o.Ended() > over.Ended()) {
				over = o
			}
		}
		if over != nil && over.Ended() >= start {
			named[over] = "op"
		}
	}
	if lastHolder != nil {
		var between []*history.Op
		for _, o := range t.ops {
			if o.Process != c.Process && o.F != history.Release && o.Ended() > lastHolder.Ended() && o.Ended() < c.Ended() {
				between = append(between, o)
			}
		}
		sort.SliceStable(between, func(i, j int) bool { return between[i].Ended() < between[j].Ended() })
		if len(between) > maxInterleaved {
			between = between[len(between)-maxInterleaved:]
		}
		for _, o := range between {
			if named[o] == "" {
				named[o] = "op"
			}
		}
	}

	// Walk the window in time order; ops not named are summed up.
	type item struct {
		at    int64
		op    *history.Op
		fault *Step
	}
	var items []item
	for _, o := range t.ops {
		if o.Ended() < start || o.Call > end {
			continue
		}
		if named[o] == "" && o.Type != history.OK && o.Error != history.ErrFenced {
			// Failed releases and the like only clutter the story.
			continue
		}
		if named[o] == "" && o.Ended() > end {
			continue // the story ends with the culprit
		}
		if o.Process == c.Process && t.slow(o) {
			var text string
			switch o.F {
			case history.Acquire:
				text = fmt.Sprintf("%s asked for the lease on %s", t.who(o.Process), t.key)
			case history.Write:
				text = fmt.Sprintf("%s began its write of %s over %s with token %d", t.who(o.Process), i64(o.Value), i64(o.Prev), o.Token)
			default:
				text = fmt.Sprintf("%s began its %s with token %d", t.who(o.Process), o.F, o.Token)
			}
			s := Step{o.Call, text, "holder", o.InvokeIndex}
			items = append(items, item{at: o.Call, fault: &s})
		}
		items = append(items, item{at: o.Ended(), op: o})
	}
	for _, s := range t.faultSteps(start, end, c.Process) {
		items = append(items, item{at: s.Time, fault: &s})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at < items[j].at })

	var steps []Step
	var skipped []*history.Op
	flush := func() {
		releases := 0
		for _, o := range skipped {
			if o.F == history.Release {
				releases++
			}
		}
		if releases == len(skipped) {
			skipped = nil // releases alone add nothing to the story
		}
		if len(skipped) > 0 && len(skipped) <= 2 {
			for _, o := range skipped {
				if o.F != history.Release {
					steps = append(steps, t.opStep(o, "op"))
				}
			}
			skipped = nil
		}
		if len(skipped) > 0 {
			s := t.meanwhile(skipped)
			s.Time = skipped[0].Ended()
			steps = append(steps, s)
			skipped = nil
		}
	}
	for _, it := range items {
		if it.fault != nil {
			flush()
			steps = append(steps, *it.fault)
			continue
		}
		o := it.op
		role := named[o]
		if role == "" {
			skipped = append(skipped, o)
			continue
		}
		flush()
		switch {
		case o == c:
			steps = append(steps, t.culpritStep(c, blamed))
		case o == takeover:
			steps = append(steps, Step{o.Ended(), fmt.Sprintf("%s took the lease on %s over with token %d: from here on, token %d is stale",
				t.who(o.Process), t.key, o.Token, acq.Token), "takeover", o.InvokeIndex})
		default:
			steps = append(steps, t.opStep(o, role))
		}
	}
	flush()
	if c.F == history.Write && c.Type == history.OK {
		if s, ok := t.lostStep(c, over); ok {
			steps = append(steps, s)
		}
		if s, ok := t.tally(); ok {
			steps = append(steps, s)
		}
	}
	return steps
}

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
	text := fmt.Sprintf("in the end: the last read (%s's, with token %d) returned %d, though %d writes of one more than the value read were acknowledged",
		t.who(last.Process), last.Token, *last.Value, okWrites)
	lost := int64(okWrites) - *last.Value
	text += fmt.Sprintf(": %d %s lost over the run", lost, plural(int(lost), "update was", "updates were"))
	if unknown > 0 {
		text += fmt.Sprintf(" (%d more writes had an unknown outcome)", unknown)
	}
	return Step{last.Ended(), text, "after", last.InvokeIndex}, true
}

// teller holds what the story of one key needs.
type teller struct {
	r        *Run
	key      string
	ops      []*history.Op // the key's ops, in invocation order
	byInvoke map[int64]*history.Op
	slots    int
	held     []Belief // the key's lease beliefs, computed on first use
}

func newTeller(r *Run, key string) *teller {
	t := &teller{r: r, key: key, byInvoke: map[int64]*history.Op{}, slots: clientSlots(r)}
	for i := range r.Ops {
		o := &r.Ops[i]
		if o.Key == key {
			t.ops = append(t.ops, o)
			t.byInvoke[o.InvokeIndex] = o
		}
	}
	return t
}

// clientSlots is the number of client slots, from the run's parameters;
// 0 when unknown.
func clientSlots(r *Run) int {
	for _, p := range r.Params {
		if p.Name == "clients" {
			if n, err := strconv.Atoi(p.Value); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// slot names the client slot a process runs in (docs/history.md).
func slotName(slots, p int) string {
	if slots <= 0 || p < 0 {
		return ""
	}
	return "c" + strconv.Itoa(p%slots+1)
}

func (t *teller) who(p int) string { return "process " + strconv.Itoa(p) }

// slow: the op took long enough, or a fault struck during it, that when
// it was sent matters to the story.
func (t *teller) slow(o *history.Op) bool {
	if o.Ended()-o.Call > 50e6 {
		return true
	}
	for _, f := range t.r.Faults {
		if f.Start > o.Call && f.Start < o.Ended() {
			return true
		}
	}
	return false
}

// newestAdmitted is the highest token on an ok read or write of the key
// by another process that completed before t, and that op.
func (t *teller) newestAdmitted(before int64, not int) (uint64, *history.Op) {
	var best uint64
	var by *history.Op
	for _, o := range t.ops {
		if o.Process != not && (o.F == history.Read || o.F == history.Write) && o.Type == history.OK && o.Done > 0 && o.Ended() < before && o.Token > best {
			best, by = o.Token, o
		}
	}
	return best, by
}

// newestGranted is the highest token granted on the key to another
// process before t, and that acquire.
func (t *teller) newestGranted(before int64, not int) (uint64, *history.Op) {
	var best uint64
	var by *history.Op
	for _, o := range t.ops {
		if o.Process != not && o.F == history.Acquire && o.Type == history.OK && o.Done > 0 && o.Ended() < before && o.Token > best {
			best, by = o.Token, o
		}
	}
	return best, by
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
	case o.F == history.Read && o.Type == history.OK:
		text = fmt.Sprintf("%s read %s with token %d", who, i64(o.Value), o.Token)
	case o.F == history.Write && o.Type == history.OK:
		text = fmt.Sprintf("%s wrote %s over %s with token %d", who, i64(o.Value), i64(o.Prev), o.Token)
	case o.F == history.Release:
		text = fmt.Sprintf("%s released the lease (%s)", who, outcome(o))
	case o.Type == history.Fail && o.Error == history.ErrFenced:
		text = fmt.Sprintf("the storage refused %s's %s with token %d as stale", who, o.F, o.Token)
	default:
		text = fmt.Sprintf("%s: %s", who, models.DescribeOp(o))
		if o.Error != "" && o.Error != history.ErrFenced {
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
	case c.Type == history.Fail && c.Error == history.ErrFenced:
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
	hslot := slotName(t.slots, holder)
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
		hits := hslot != "" && contains(f.Nodes, hslot)
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

// slotContext says which process runs in the hit slots and what it was
// doing on this key at time at.
func (t *teller) slotContext(nodes []string, at int64) string {
	if t.slots == 0 {
		return ""
	}
	var parts []string
	for _, n := range nodes {
		var cur *history.Op
		for i := range t.r.Ops {
			o := &t.r.Ops[i]
			if slotName(t.slots, o.Process) == n && o.Call <= at {
				cur = o
			}
		}
		if cur == nil {
			continue
		}
		p := cur.Process
		part := t.who(p)
		switch {
		case cur.Key != t.key:
		case cur.Ended() > at || cur.Ended() == 0:
			part += fmt.Sprintf(", in the middle of its %s of %s", cur.F, t.key)
			if cur.F != history.Acquire && cur.Token != 0 {
				part += fmt.Sprintf(" with token %d", cur.Token)
			}
		default:
			for _, b := range t.beliefs() {
				if b.Process == p && b.Start <= at && b.End > at {
					part += fmt.Sprintf(", holding token %d on %s", b.Token, t.key)
					break
				}
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func (t *teller) beliefs() []Belief {
	if t.held == nil {
		ops := make([]history.Op, len(t.ops))
		for i, o := range t.ops {
			ops[i] = *o
		}
		t.held = Beliefs(ops, historyEnd(t.r))
	}
	return t.held
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
		if o.Type == history.Fail && o.Error == history.ErrFenced {
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

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func andList(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	if xs[len(xs)-1] == "…" {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
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
