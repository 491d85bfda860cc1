package models

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/history"
)

// StaleWriteFirst names the cause first. The one-pass check reports the
// first op that no order can place; when a paused holder's write was
// accepted early in its long interval, that op is a later read or write
// that the stale value made impossible, and the write itself — the cause —
// goes unnamed. So for each invalid key whose sentence does not already
// say so, the earliest write that the storage accepted after a higher
// token had been admitted (returned before the write did, as the damage
// counts it) is told first. Broken token order stays first: it causes
// whatever the storage then saw. The verdicts do not change; only a write
// that returned no later than the op the check could not place is named.
func StaleWriteFirst(res Result, ops []history.Op) Result {
	if res.Verdict != Invalid {
		return res
	}
	res.Keys = slices.Clone(res.Keys)
	first := ""
	for i := range res.Keys {
		k := &res.Keys[i]
		if k.Verdict != Invalid {
			continue
		}
		old := k.Explanation
		if !strings.Contains(old, "stale lease holder's write was accepted") && !strings.Contains(old, "tokens must only increase") {
			c := culprit(ops, k.Culprits)
			msg, blamed, ok := staleWrite(ops, k.Key, c)
			if !ok && !strings.Contains(old, "an update was lost") {
				msg, blamed, ok = lostUpdate(ops, c)
			}
			if ok {
				k.Explanation = msg + "; then " + old
				k.Culprits = append(blamed, k.Culprits...)
			}
		}
		k.Explanation = neverTookEffect(ops, k.Explanation, k.Culprits)
		// The run's sentence is the key's whose violation came first
		// (verdictOf), not necessarily the first invalid key's.
		if first == "" && strings.HasPrefix(res.Explanation, old) {
			first = old
			res.Explanation = k.Explanation + strings.TrimPrefix(res.Explanation, old)
		}
	}
	return res
}

// staleAcceptedTail ends the sentence of a write with a token below one
// already admitted that was acknowledged.
const staleAcceptedTail = ": a stale lease holder's write was accepted"

// neverTookEffect retells a stale write the check named first when the
// history shows it never happened: the first read after it was
// acknowledged, with no other write that could come between, found
// another value. The fenced-storage model cannot tell such a write from
// an accepted one (both are an ok write with a lower token), but a client
// that fences with its own SQL and ignores the row count reports ok for
// an UPDATE that changed nothing; that is the bug to name. The verdict
// does not change.
func neverTookEffect(ops []history.Op, explanation string, culprits []int64) string {
	w := culprit(ops, culprits)
	if w == nil || w.F != history.Write || w.Value == nil || !strings.Contains(explanation, staleAcceptedTail) {
		return explanation
	}
	var r *history.Op
	for i := range ops {
		o := &ops[i]
		if o.Key == w.Key && o.F == history.Read && o.Type == history.OK && o.Value != nil && o.Call > w.Ended() &&
			(r == nil || o.Call < r.Call) {
			r = o
		}
	}
	if r == nil || *r.Value == *w.Value {
		return explanation
	}
	held := *r.Value == 0 // what the storage held before w, if not the initial 0
	for i := range ops {
		o := &ops[i]
		if o == w || o.Key != w.Key || o.F != history.Write || o.Type == history.Fail {
			continue
		}
		if o.Ended() > w.Call && o.Call < r.Ended() {
			return explanation // it may have overwritten w's value
		}
		if o.Value != nil && *o.Value == *r.Value && o.Call < w.Call {
			held = true
		}
	}
	if !held {
		return explanation // the read is not explained by the state before w
	}
	return strings.Replace(explanation, staleAcceptedTail, fmt.Sprintf(
		": the write was acknowledged but never took effect (process %d's read at %s, the next with no write between, found %d, not %s), so the client reported ok for a write its storage never made",
		r.Process, secs(r.Ended()), *r.Value, i64(w.Value)), 1)
}

// culprit is the op the check could not place, or nil when it is not
// among ops.
func culprit(ops []history.Op, culprits []int64) *history.Op {
	if len(culprits) > 0 {
		for i := range ops {
			if ops[i].InvokeIndex == culprits[0] {
				return &ops[i]
			}
		}
	}
	return nil
}

// staleWrite finds the earliest ok write on key that returned after an op
// with a higher token had been admitted and that can have caused the op
// the check could not place: it returned no later than that op, or it was
// still in flight when that op read the very value it wrote (a stale write
// applied just before the read but answered just after it).
func staleWrite(ops []history.Op, key string, c *history.Op) (string, []int64, bool) {
	before := int64(1<<63 - 1)
	if c != nil {
		before = c.Ended()
	}
	readIt := func(w *history.Op) bool {
		return c != nil && c.F == history.Read && c.Value != nil && w.Value != nil &&
			*c.Value == *w.Value && w.Call < before
	}
	var admitted, writes []*history.Op
	for i := range ops {
		o := &ops[i]
		if o.Key != key || o.Type != history.OK || (o.F != history.Read && o.F != history.Write) {
			continue
		}
		admitted = append(admitted, o)
		if o.F == history.Write {
			writes = append(writes, o)
		}
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].Ended() < admitted[j].Ended() })
	sort.Slice(writes, func(i, j int) bool { return writes[i].Ended() < writes[j].Ended() })
	var best *history.Op // the highest token admitted so far
	next := 0
	for _, w := range writes {
		if w.Ended() > before && !readIt(w) {
			continue
		}
		for next < len(admitted) && admitted[next].Ended() < w.Ended() {
			if best == nil || admitted[next].Token > best.Token {
				best = admitted[next]
			}
			next++
		}
		if best != nil && best.Token > w.Token {
			return fmt.Sprintf("process %d wrote %s with token %d at %s after token %d was admitted at %s (process %d's %s at %s): a stale lease holder's write was accepted",
				w.Process, i64(w.Value), w.Token, secs(w.Ended()), best.Token, secs(best.Ended()), best.Process, best.F, secs(best.Ended())), []int64{w.InvokeIndex, best.InvokeIndex}, true
		}
	}
	return "", nil, false
}

// lostUpdate explains a read the check could not place by the write whose
// value it read, when that write must have replaced a newer value than
// the one it was computed from — the paused holder's write of a tokenless
// lock, which no token order gives away. The read began after write x was
// acknowledged, yet it saw w's value: so w took effect after x, and if w
// was computed from another value than x's, x's update (and whatever
// came between) was lost.
func lostUpdate(ops []history.Op, c *history.Op) (string, []int64, bool) {
	if c == nil || c.F != history.Read || c.Type != history.OK || c.Value == nil {
		return "", nil, false
	}
	// x is the last write of another value acknowledged before the read
	// began: the value read was written after it.
	var x *history.Op
	for i := range ops {
		o := &ops[i]
		if o.Key == c.Key && o.F == history.Write && o.Type == history.OK && o.Value != nil &&
			*o.Value != *c.Value && o.Ended() < c.Call && (x == nil || o.Ended() > x.Ended()) {
			x = o
		}
	}
	if x == nil {
		return "", nil, false
	}
	for i := range ops {
		w := &ops[i]
		if w.Key != c.Key || w.F != history.Write || w.Type != history.OK || w.Value == nil || w.Prev == nil ||
			*w.Value != *c.Value || w.Call >= c.Ended() || w.Ended() < x.Call || *w.Prev == *x.Value {
			continue
		}
		if valueAfter(ops, c.Key, *w.Prev, x.Call) {
			continue // w may have followed a later write of the value it read
		}
		return fmt.Sprintf("process %d wrote %s over %d at %s, after process %d's write of %d was acknowledged at %s: an update was lost",
			w.Process, i64(w.Value), *w.Prev, secs(w.Ended()), x.Process, *x.Value, secs(x.Ended())), []int64{w.InvokeIndex, x.InvokeIndex}, true
	}
	return "", nil, false
}

// valueAfter reports whether a write of v on key (ok, or of unknown
// outcome) may have taken effect at or after t.
func valueAfter(ops []history.Op, key string, v int64, t int64) bool {
	for i := range ops {
		o := &ops[i]
		if o.Key == key && o.F == history.Write && o.Type != history.Fail && o.Value != nil && *o.Value == v && o.Ended() >= t {
			return true
		}
	}
	return false
}

// causeEventLimit bounds the events StaleWriteFirstFrom holds: a violation found
// deep into a soak-length history keeps the check's own sentence rather
// than hold the history in memory, which the streaming check avoids.
const causeEventLimit = 2_000_000

// errEnough ends the second read once every op that can matter is in.
var errEnough = errors.New("enough")

// StaleWriteFirstFrom reads the history from r for the invalid keys' ops up to the
// op the check could not place (and the completions of ops still in
// flight then), and the faults until then, so that a check of a streamed
// history (`check analyze`) names an accepted stale write first, and the
// crash that lost a grant (CrashFirst), as the run itself does
// (StaleWriteFirst), without holding the history in memory. On any trouble, or past
// causeEventLimit events, the result stands as the check gave it.
func StaleWriteFirstFrom(r io.Reader, res Result) Result {
	if res.Verdict != Invalid {
		return res
	}
	keys := map[string]bool{}
	var last int64 = -1
	for _, k := range res.Keys {
		if k.Verdict == Invalid && len(k.Culprits) > 0 {
			keys[k.Key] = true
			last = max(last, k.Culprits[0])
		}
	}
	if len(keys) == 0 {
		return res
	}
	var events, nemesis []history.Event
	pending := map[int]bool{}
	_, err := history.LoadEach(r, func(e history.Event) error {
		switch {
		case e.IsNemesis():
			nemesis = append(nemesis, e)
		case e.Type == history.Invoke:
			if e.Index > last {
				if len(pending) == 0 {
					return errEnough
				}
			} else if keys[e.Key] {
				pending[e.Process] = true
				events = append(events, e)
			}
		case pending[e.Process]:
			delete(pending, e.Process)
			events = append(events, e)
		}
		if len(events) > causeEventLimit {
			return errEnough
		}
		return nil
	})
	if (err != nil && !errors.Is(err, errEnough)) || len(events) > causeEventLimit {
		return res
	}
	ops, _ := history.Pair(events)
	_, faults := history.Pair(nemesis)
	return CrashFirst(StaleWriteFirst(res, ops), ops, faults)
}
