package models

import (
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/history"
)

// The state the streaming check of a key carries from point to point (see
// jit.go): points in time, sets of ops in flight, configurations and the
// unknown ops that may still take effect.

// point is a call or a return of an op, in time order; at the same time
// calls come first (the ops touch, so they are concurrent), as porcupine
// orders them.
type point struct {
	t    int64
	ret  bool
	seq  uint64
	op   *history.Op
	slot int
}

type points []point

func (p points) Len() int { return len(p) }
func (p points) Less(i, j int) bool {
	if p[i].t != p[j].t {
		return p[i].t < p[j].t
	}
	if p[i].ret != p[j].ret {
		return !p[i].ret
	}
	return p[i].seq < p[j].seq
}
func (p points) Swap(i, j int) { p[i], p[j] = p[j], p[i] }
func (p *points) Push(x any)   { *p = append(*p, x.(point)) }
func (p *points) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}

// maxInFlight bounds the reads and writes of one key in flight at once: a
// client has one op at a time, and a test has at most 100 clients.
const maxInFlight = 128

// slots is a set of in-flight op slots.
type slots [maxInFlight / 64]uint64

func (s slots) has(i int) bool        { return s[i/64]&(1<<(i%64)) != 0 }
func (s slots) with(i int) slots      { s[i/64] |= 1 << (i % 64); return s }
func (s slots) without(i int) slots   { s[i/64] &^= 1 << (i % 64); return s }
func (s slots) empty() bool           { return s == slots{} }
func (s slots) disjoint(o slots) bool { return s[0]&o[0] == 0 && s[1]&o[1] == 0 }

// sconfig is one configuration of the storage check.
type sconfig struct {
	t     traced
	lin   slots   // in-flight ops already placed
	fired []int32 // unknown ops that took effect (sorted ids)
}

type ckey struct {
	r     reg
	lin   slots
	fired string
}

func (c *sconfig) key() ckey {
	k := ckey{r: c.t.reg, lin: c.lin}
	if len(c.fired) > 0 {
		b := make([]byte, 0, 4*len(c.fired))
		for _, id := range c.fired {
			b = append(b, byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
		}
		k.fired = string(b)
	}
	return k
}

// keySet is a set of configuration keys: a list while small (the common
// case), a map beyond.
type keySet struct {
	list []ckey
	m    map[ckey]bool
}

// insert adds k and reports whether it was new.
func (s *keySet) insert(k ckey) bool {
	if s.m != nil {
		if s.m[k] {
			return false
		}
		s.m[k] = true
		return true
	}
	for _, x := range s.list {
		if x == k {
			return false
		}
	}
	s.list = append(s.list, k)
	if len(s.list) > 16 {
		s.m = map[ckey]bool{}
		for _, x := range s.list {
			s.m[x] = true
		}
		s.list = nil
	}
	return true
}

func hasID(ids []int32, id int32) bool {
	_, ok := slices.BinarySearch(ids, id)
	return ok
}

func withID(ids []int32, id int32) []int32 {
	i, _ := slices.BinarySearch(ids, id)
	out := make([]int32, 0, len(ids)+1)
	out = append(out, ids[:i]...)
	out = append(out, id)
	return append(out, ids[i:]...)
}

// retrace is t after op moved its state to r.
func retrace(t traced, r reg, op *history.Op) traced {
	if r.fence != t.fence {
		t.fenceBy = op
	}
	if r.value != t.value || (op.F == history.Write && r != t.reg) {
		t.valueBy = op
	}
	t.reg = r
	return t
}

// unknownOp is an op of unknown outcome that may still take effect.
type unknownOp struct {
	op *history.Op
	id int32
}

// unknownHeap orders unknown ops by token, for forgetting them once the
// lowest admitted fence has passed them.
type unknownHeap []unknownOp

func (h unknownHeap) Len() int           { return len(h) }
func (h unknownHeap) Less(i, j int) bool { return h[i].op.Token < h[j].op.Token }
func (h unknownHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *unknownHeap) Push(x any)        { *h = append(*h, x.(unknownOp)) }
func (h *unknownHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// effect is the state an unknown op leads to from r when it takes effect,
// and whether that differs from r at all.
func effect(r reg, o *history.Op) (reg, bool) {
	if o.Token < r.fence {
		return r, false
	}
	switch o.F {
	case history.Read:
		if o.Token > r.fence {
			return reg{value: r.value, fence: o.Token}, true
		}
	case history.Write:
		if o.Prev != nil && *o.Prev == r.value && o.Value != nil {
			n := reg{value: *o.Value, fence: o.Token}
			return n, n != r
		}
	}
	return r, false
}

// dead reports whether an unknown op can no longer change state r nor any
// state that follows it (fences only grow).
func dead(r reg, o *history.Op) bool {
	if o.F == history.Read {
		return o.Token <= r.fence
	}
	return o.Token < r.fence
}

// errTooConcurrent ends a key's check that has more ops in flight than
// the slots hold.
var errTooConcurrent = fmt.Errorf("more than %d reads and writes of one key in flight at once", maxInFlight)
