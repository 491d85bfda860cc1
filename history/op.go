package history

import (
	"math"
	"slices"
)

// Op is an invocation paired with its completion.
type Op struct {
	Process int
	F       string
	Key     string
	// Token is the token the op carried; for an ok acquire, the one it got.
	Token uint64
	Prev  *int64 // writes: the value the section read
	// Value is a write's new value or an ok read's result.
	Value *int64
	// Type is the completion: OK, Fail or Info. An invoke the run never
	// completed is Info.
	Type  Type
	Error string
	// Call is the invoke time, or the client's own later reading of when
	// it issued the op (Event.Call); Return is the completion time, or
	// the client's own earlier reading of the answer (Event.Return), and
	// math.MaxInt64 when the outcome is unknown.
	Call   int64
	Return int64
	// Done is when the completion was recorded, info included (for drawing);
	// 0 when the run ended first.
	Done int64
	// InvokeIndex and CompleteIndex point back into the history; CompleteIndex
	// is -1 when there was no completion.
	InvokeIndex, CompleteIndex int64
	// LockFree marks a lock-free read: a read its process invoked while it
	// held no lock on the key (no ok acquire of the key since its last
	// release). It presents no token, so it can be neither stale nor
	// refused as stale, and it is nobody's section (--read-mix;
	// docs/history.md, "Lock-free reads").
	LockFree bool
}

// Completed reports whether the history holds the op's completion.
func (o *Op) Completed() bool { return o.CompleteIndex >= 0 }

// Fault is one nemesis interval: from the event that started it to the one
// that ended it (End is math.MaxInt64 when the run ended first).
type Fault struct {
	F          string
	Nodes      []string
	Start, End int64
	Error      string
}

// Pair turns client events into ops in invocation order and nemesis events
// into fault intervals. It expects a validated history.
func Pair(events []Event) (ops []Op, faults []Fault) {
	pending := map[int]int{} // process -> index into ops
	// The open intervals of each fault, oldest first. Several of one
	// fault can be open at once (pause-holder with --holders-at-once):
	// an end closes the one on its nodes, else the latest.
	openFault := map[string][]int{}
	held := heldLocks{}
	for _, e := range events {
		if e.IsNemesis() {
			switch e.Type {
			case Invoke:
				faults = append(faults, Fault{F: e.F, Nodes: e.Nodes, Start: e.Time, End: math.MaxInt64})
				openFault[e.F] = append(openFault[e.F], len(faults)-1)
			default:
				if open := openFault[e.F]; len(open) > 0 {
					j := len(open) - 1
					for k, i := range open {
						if e.Nodes != nil && slices.Equal(faults[i].Nodes, e.Nodes) {
							j = k
							break
						}
					}
					i := open[j]
					faults[i].End = e.Time
					if e.Nodes != nil {
						faults[i].Nodes = e.Nodes
					}
					faults[i].Error = e.Error
					openFault[e.F] = slices.Delete(open, j, j+1)
					if len(openFault[e.F]) == 0 {
						delete(openFault, e.F)
					}
				} else {
					faults = append(faults, Fault{F: e.F, Nodes: e.Nodes, Start: e.Time, End: e.Time, Error: e.Error})
				}
			}
			continue
		}
		if e.Type == Invoke {
			ops = append(ops, invokeOp(e))
			held.invoke(&ops[len(ops)-1])
			pending[e.Process] = len(ops) - 1
			continue
		}
		i, ok := pending[e.Process]
		if !ok {
			continue
		}
		delete(pending, e.Process)
		completeOp(&ops[i], e)
		held.complete(&ops[i])
	}
	return ops, faults
}

// heldLocks are the locks each process holds as the history goes: from an
// ok acquire of a key to the invocation of its release (or to an op of
// unknown outcome, after which the process is retired). A read invoked
// outside them is a lock-free read.
type heldLocks map[heldLock]bool

type heldLock struct {
	process int
	key     string
}

// invoke marks a read lock-free when its process holds no lock on its key,
// and ends the hold at a release (or a new acquire).
func (h heldLocks) invoke(o *Op) {
	k := heldLock{o.Process, o.Key}
	switch o.F {
	case Read:
		o.LockFree = !h[k]
	case Release, Acquire:
		delete(h, k)
	}
}

// complete starts a hold at an ok acquire and ends it at an op of unknown
// outcome.
func (h heldLocks) complete(o *Op) {
	k := heldLock{o.Process, o.Key}
	switch {
	case o.F == Acquire && o.Type == OK:
		h[k] = true
	case o.Type == Info:
		delete(h, k)
	}
}

// invokeOp is the op an invoke starts: unknown until its completion.
func invokeOp(e Event) Op {
	return Op{Process: e.Process, F: e.F, Key: e.Key, Token: e.Token, Prev: e.Prev, Value: e.Value,
		Type: Info, Call: e.Time, Return: math.MaxInt64, InvokeIndex: e.Index, CompleteIndex: -1}
}

// completeOp fills in what the completion e tells about o.
func completeOp(o *Op, e Event) {
	o.Type = e.Type
	o.Error = e.Error
	o.CompleteIndex = e.Index
	o.Return = e.Time
	o.Done = e.Time
	if e.Call != 0 {
		o.Call = max(o.Call, e.Call)
	}
	if e.Return != 0 {
		o.Return = max(e.Return, o.Call)
	}
	if e.Type == Info {
		o.Return = math.MaxInt64
	}
	if e.F == Acquire && e.Type == OK {
		o.Token = e.Token
	}
	if e.F == Read && e.Type == OK {
		o.Value = e.Value
	}
}
