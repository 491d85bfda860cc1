package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// teller holds what the story of one key needs.
type teller struct {
	r        *Run
	key      string
	ops      []*history.Op // the key's ops, in invocation order
	byInvoke map[int64]*history.Op
	slots    int
	held     []models.Belief // the key's lease beliefs, computed on first use
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
			if history.SlotOf(o.Process, t.slots) == n && o.Call <= at {
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

func (t *teller) beliefs() []models.Belief {
	if t.held == nil {
		ops := make([]history.Op, len(t.ops))
		for i, o := range t.ops {
			ops[i] = *o
		}
		t.held = models.Beliefs(ops, t.r.End())
	}
	return t.held
}
