package history

import "sort"

// Pairer pairs client events into ops one event at a time, as Pair does
// for a whole history, so a long history can be read as a stream: it
// holds only the ops still waiting for their completion.
type Pairer struct {
	pending map[int]*Op
	held    heldLocks
}

// NewPairer starts an empty stream.
func NewPairer() *Pairer { return &Pairer{pending: map[int]*Op{}, held: heldLocks{}} }

// Add takes the next event of a validated history. An invoke returns the
// pending op it starts (complete false; the same pointer is completed
// later); a completion returns its op, now complete. Nemesis events and
// completions without an invoke return nil.
func (p *Pairer) Add(e Event) (op *Op, complete bool) {
	if e.IsNemesis() {
		return nil, false
	}
	if e.Type == Invoke {
		o := invokeOp(e)
		p.held.invoke(&o)
		p.pending[e.Process] = &o
		return &o, false
	}
	o, ok := p.pending[e.Process]
	if !ok {
		return nil, false
	}
	delete(p.pending, e.Process)
	completeOp(o, e)
	p.held.complete(o)
	return o, true
}

// Pending returns the ops whose completion never came, in invocation
// order: their outcome is unknown (Type Info), as Pair has them.
func (p *Pairer) Pending() []*Op {
	out := make([]*Op, 0, len(p.pending))
	for _, o := range p.pending {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InvokeIndex < out[j].InvokeIndex })
	return out
}
