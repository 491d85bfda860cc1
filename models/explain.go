package models

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// traced is a storage state with the ops that last moved its fence and its
// value, so an explanation can name them.
type traced struct {
	reg
	fenceBy, valueBy *history.Op
}

// Explain turns porcupine's longest partial linearization of an illegal key
// into one sentence and the culprits: the first op (in invocation order)
// that cannot follow that prefix, and the op it conflicts with.
func Explain(ops []porcupine.Operation, info porcupine.LinearizationInfo, model porcupine.Model) (string, []int64) {
	parts := model.Partition(ops)
	partials := info.PartialLinearizationsOperations()
	for p, partOps := range parts {
		if p >= len(partials) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range partials[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(partOps) {
			continue // this half is fine
		}
		return explainPart(partOps, longest)
	}
	return "no order of the ops is consistent with fenced storage", nil
}

func explainPart(partOps, prefix []porcupine.Operation) (string, []int64) {
	in := map[*history.Op]bool{}
	for _, op := range prefix {
		in[op.Input.(*history.Op)] = true
	}
	var rest []*history.Op
	for _, op := range partOps {
		o := op.Input.(*history.Op)
		if !in[o] {
			rest = append(rest, o)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Call < rest[j].Call })
	if len(rest) == 0 {
		return "no order of the ops is consistent with fenced storage", nil
	}

	if rest[0].F == history.Acquire || (len(prefix) > 0 && prefix[0].Input.(*history.Op).F == history.Acquire) {
		var g uint64
		var by *history.Op
		for _, op := range prefix {
			o := op.Input.(*history.Op)
			g, by = o.Token, o
		}
		for _, o := range rest {
			if o.Token <= g {
				return fmt.Sprintf("process %d was granted token %d at %s, but token %d had already been granted at %s (to process %d): tokens must only increase",
					o.Process, o.Token, secs(o.Return), g, secs(by.Return), by.Process), culprits(o, by)
			}
		}
		return fmt.Sprintf("no order of the grants is consistent with their tokens, starting with process %d's token %d at %s", rest[0].Process, rest[0].Token, secs(rest[0].Return)), culprits(rest[0], nil)
	}

	states := []traced{{}}
	for _, op := range prefix {
		o := op.Input.(*history.Op)
		var next []traced
		for _, s := range states {
			for _, r := range stepReg(s.reg, o, nil) {
				t := s
				if r.fence != s.fence {
					t.fenceBy = o
				}
				if r.value != s.value || (o.F == history.Write && r != s.reg) {
					t.valueBy = o
				}
				t.reg = r
				next = append(next, t)
			}
		}
		states = dedupe(next)
	}
	for _, o := range rest {
		if len(stepAll(states, o)) > 0 {
			continue // possible here; it is stuck behind another op
		}
		s := states[0]
		return sentence(o, s), culprits(o, blame(o, s))
	}
	o := rest[0]
	return fmt.Sprintf("no order of the ops from process %d's %s at %s on is consistent with fenced storage", o.Process, DescribeOp(o), secs(o.Call)), culprits(o, nil)
}

func stepAll(states []traced, o *history.Op) regs {
	var out regs
	for _, s := range states {
		out = stepReg(s.reg, o, out)
	}
	return out
}

func dedupe(ts []traced) []traced {
	var out []traced
	for _, t := range ts {
		dup := false
		for _, u := range out {
			if u.reg == t.reg {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}

// blame is the op whose effect o conflicts with.
func blame(o *history.Op, s traced) *history.Op {
	if o.Type == history.OK && o.Token < s.fence {
		return s.fenceBy
	}
	return s.valueBy
}

func sentence(o *history.Op, s traced) string {
	who := func(b *history.Op) string {
		if b == nil {
			return "the initial state"
		}
		return fmt.Sprintf("process %d's %s at %s", b.Process, b.F, secs(b.Return))
	}
	switch {
	case o.Type == history.OK && o.Token < s.fence && o.F == history.Write:
		held := ""
		if s.valueBy != nil {
			held = fmt.Sprintf("; the storage then held %d, from %s", s.value, who(s.valueBy))
		}
		return fmt.Sprintf("process %d wrote %s with token %d at %s after token %d was admitted at %s (%s)%s: a stale lease holder's write was accepted",
			o.Process, i64(o.Value), o.Token, secs(o.Return), s.fence, secs(s.fenceBy.Return), who(s.fenceBy), held)
	case o.F == history.Write && o.Type == history.OK && o.Prev != nil && *o.Prev != s.value:
		return fmt.Sprintf("process %d wrote %s over %d at %s, but the storage held %d (written by %s): an update was lost",
			o.Process, i64(o.Value), *o.Prev, secs(o.Return), s.value, who(s.valueBy))
	case o.F == history.Read && o.Type == history.OK && o.Value != nil && *o.Value != s.value:
		return fmt.Sprintf("process %d read %d with token %d at %s, but the storage held %d (written by %s)",
			o.Process, *o.Value, o.Token, secs(o.Return), s.value, who(s.valueBy))
	case o.Type == history.Fail && o.Error == lockclient.ErrorFenced:
		return fmt.Sprintf("the storage refused process %d's %s with token %d as fenced at %s, though the highest token admitted was %d: the storage fenced a current holder",
			o.Process, o.F, o.Token, secs(o.Return), s.fence)
	}
	return fmt.Sprintf("process %d's %s at %s is not possible after %s (value %d, fence %d)",
		o.Process, DescribeOp(o), secs(o.Return), who(s.valueBy), s.value, s.fence)
}

func culprits(o, other *history.Op) []int64 {
	out := []int64{o.InvokeIndex}
	if other != nil {
		out = append(out, other.InvokeIndex)
	}
	return out
}

// secs prints a history time the way every output does.
func secs(t int64) string { return history.Seconds(t) }
