package models

// The fenced-storage model: a register that admits only the newest lease
// holder, as porcupine's Model (FencedStorage) and as the step the
// one-pass checker takes (stepReg). Pure data and pure functions.

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// reg is the storage side of one key: the value and the highest token the
// storage has admitted.
type reg struct {
	value int64
	fence uint64
}

// regs is a set of possible storage states, sorted and without duplicates.
// It has more than one member only after an op whose outcome is unknown.
type regs []reg

func (s regs) normalize() regs {
	if len(s) < 2 {
		return s
	}
	sort.Slice(s, func(i, j int) bool {
		if s[i].value != s[j].value {
			return s[i].value < s[j].value
		}
		return s[i].fence < s[j].fence
	})
	out := s[:1]
	for _, r := range s[1:] {
		if r != out[len(out)-1] {
			out = append(out, r)
		}
	}
	return out
}

// stepReg applies one storage op to one state and returns the states it can
// lead to (none: the op is impossible here).
//
// A lock-free read (o.LockFree) presents no token: it must see the value,
// and it never moves the fence. With its token 0 the rules below already
// say so (0 is admitted only while the fence is 0, and then leaves it 0).
func stepReg(s reg, o *history.Op, into regs) regs {
	t := o.Token
	admit := t >= s.fence
	switch o.F {
	case history.Read:
		switch o.Type {
		case history.OK:
			if o.Value == nil || *o.Value != s.value {
				return into
			}
			if admit {
				s.fence = t
			}
			return append(into, s)
		case history.Fail:
			if o.Error == lockclient.ErrorFenced && admit {
				return into
			}
			return append(into, s)
		default: // info: took effect or not
			into = append(into, s)
			if admit {
				s.fence = t
				into = append(into, s)
			}
			return into
		}
	case history.Write:
		applies := admit && o.Prev != nil && *o.Prev == s.value && o.Value != nil
		switch o.Type {
		case history.OK:
			if !applies {
				return into
			}
			return append(into, reg{value: *o.Value, fence: t})
		case history.Fail:
			if o.Error == lockclient.ErrorFenced && admit {
				return into
			}
			return append(into, s)
		default:
			into = append(into, s)
			if applies {
				into = append(into, reg{value: *o.Value, fence: t})
			}
			return into
		}
	}
	return append(into, s)
}

// granted is the lease side of one key: the highest token handed out.
type granted uint64

// part tells which independent half of a key's state an op touches. The
// token order (acquires) and the storage (reads and writes) share nothing in
// the model, so by locality each is linearizable on its own and they are
// checked as separate partitions: much cheaper than one product state.
// (Check decides the lease partition without porcupine, see checkGrants;
// the model still describes it, for anyone searching acquires directly.)
func part(o *history.Op) string {
	if o.F == history.Acquire {
		return "lease"
	}
	return "storage"
}

// Relevant reports whether an op constrains the model at all. Releases,
// failed or unknown acquires, tokenless acquires and storage fails other
// than "fenced" have no effect and are left out of the search.
func Relevant(o *history.Op) bool {
	switch o.F {
	case history.Acquire:
		return o.Type == history.OK && o.Token != 0
	case history.Read, history.Write:
		return !(o.Type == history.Fail && o.Error != lockclient.ErrorFenced)
	}
	return false
}

// state is what porcupine carries: one of the two halves.
type state struct {
	lease   granted
	storage regs
	isLease bool
}

func step(st interface{}, in, _ interface{}) (bool, interface{}) {
	s := st.(state)
	o := in.(*history.Op)
	if o.F == history.Acquire {
		if o.Type != history.OK || o.Token == 0 {
			return true, s
		}
		if o.Token <= uint64(s.lease) {
			return false, s
		}
		return true, state{lease: granted(o.Token), isLease: true}
	}
	next := make(regs, 0, 2*len(s.storage))
	for _, r := range s.storage {
		next = stepReg(r, o, next)
	}
	if len(next) == 0 {
		return false, s
	}
	return true, state{storage: next.normalize()}
}

func equal(a, b interface{}) bool {
	x, y := a.(state), b.(state)
	if x.isLease != y.isLease || x.lease != y.lease || len(x.storage) != len(y.storage) {
		return false
	}
	for i := range x.storage {
		if x.storage[i] != y.storage[i] {
			return false
		}
	}
	return true
}

func hash(a interface{}) uint64 {
	s := a.(state)
	h := uint64(s.lease)*0x9E3779B97F4A7C15 + 1
	for _, r := range s.storage {
		h ^= uint64(r.value)*0xff51afd7ed558ccd + r.fence*0xc4ceb9fe1a85ec53
		h = h<<13 | h>>51
	}
	return h
}

// DescribeOp renders an op the way the report and porcupine show it.
func DescribeOp(o *history.Op) string {
	out := ""
	switch o.Type {
	case history.OK:
		out = "ok"
	case history.Fail:
		out = "fail"
		if o.Error != "" {
			out += " " + o.Error
		}
	default:
		out = "?"
	}
	switch o.F {
	case history.Acquire:
		if o.Type == history.OK {
			return fmt.Sprintf("acquire → token %d", o.Token)
		}
		return "acquire → " + out
	case history.Read:
		t := fmt.Sprintf("t=%d", o.Token)
		if o.LockFree {
			t = "lock-free"
		}
		if o.Type == history.OK && o.Value != nil {
			return fmt.Sprintf("read(%s) → %d", t, *o.Value)
		}
		return fmt.Sprintf("read(%s) → %s", t, out)
	case history.Write:
		return fmt.Sprintf("write(t=%d, %s→%s) → %s", o.Token, i64(o.Prev), i64(o.Value), out)
	}
	return o.F + " → " + out
}

func i64(p *int64) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func describeState(a interface{}) string {
	s := a.(state)
	if s.isLease {
		return fmt.Sprintf("granted ≤ %d", s.lease)
	}
	if len(s.storage) == 1 {
		return fmt.Sprintf("value %d, fence %d", s.storage[0].value, s.storage[0].fence)
	}
	out := "one of {"
	for i, r := range s.storage {
		if i > 0 {
			out += "; "
		}
		out += fmt.Sprintf("value %d, fence %d", r.value, r.fence)
	}
	return out + "}"
}

// FencedStorage is the porcupine model of one key: its ops are split into
// the lease partition and the storage partition. Inputs and outputs are the
// same *history.Op.
func FencedStorage() porcupine.Model {
	return porcupine.Model{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
			var lease, storage []porcupine.Operation
			for _, op := range ops {
				if part(op.Input.(*history.Op)) == "lease" {
					lease = append(lease, op)
				} else {
					storage = append(storage, op)
				}
			}
			var out [][]porcupine.Operation
			if len(lease) > 0 {
				out = append(out, lease)
			}
			if len(storage) > 0 {
				out = append(out, storage)
			}
			return out
		},
		Init: func() interface{} { return state{storage: regs{{}}} },
		// The initial state serves both halves: an acquire reads only its
		// lease, a read or write only its storage.
		Step:  step,
		Equal: equal,
		Hash:  hash,
		DescribeOperation: func(in, _ interface{}) string {
			return DescribeOp(in.(*history.Op))
		},
		DescribeState: describeState,
	}
}
