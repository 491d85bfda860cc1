package models

import (
	"container/heap"
	"fmt"
	"math"
	"sort"

	"github.com/fencecheck/fencecheck/history"
)

// The streaming check of one key. Fenced storage lets a key be checked in
// one pass over time with memory bounded by the ops in flight, not by the
// length of the history:
//
//   - The grants (acquires) need no search at all: the one order they can
//     take is by token, so a grant is wrong exactly when a grant with a token
//     at least as high returned before it was asked for, or when two grants
//     in flight at once carry the same token (see checkGrants). One pass
//     over calls and returns in time order keeps the highest token returned
//     so far and the grants in flight.
//
//   - The storage is checked as Lowe's just-in-time linearization does: a
//     set of configurations (a possible storage state, which ops in flight
//     it has already placed, which unknown ops it has let take effect) is
//     carried from point to point in time. A call adds an op to what may be
//     placed; a return forces the op to be placed in every configuration,
//     possibly after some of the other ops in flight. No configuration left
//     means no order of the ops so far is consistent with fenced storage:
//     the history is invalid, and the op that returned is the one no order
//     can take. Ops that returned are forgotten, so the set stays as small
//     as the concurrency of the key.
//
//   - An op whose outcome is unknown never returns: it may take effect at
//     any moment after its call, or never. A configuration lets it take
//     effect only where that changes the state (not taking effect is always
//     allowed), and forgets it once it can no longer: when its token is
//     below the highest token admitted (fenced storage refuses it from then
//     on), or it took effect already. A recipe without tokens (all tokens
//     0) gives no such bound, so its unknown writes stay open to the end;
//     they cost only when the storage holds the value they would replace.
//
//   - A quiescent cut is a moment with no op of the key in flight and no
//     unknown op still able to take effect: there the configurations are
//     plain storage states, and what came before can be forgotten. The ops
//     since the last cut form the window porcupine visualizes when the key
//     is invalid, starting from the states at the cut.

// keyCheck is the streaming check of one key.
type keyCheck struct {
	key     string
	visMax  int
	seq     uint64
	storage points // pending points of reads and writes
	grantPs points // pending points of grants

	// The storage check.
	configs  []sconfig
	inFlight [maxInFlight]*history.Op
	nFlight  int
	unknown  map[int32]*history.Op // unknown ops that may still take effect
	byPrev   map[int64][]int32     // unknown writes by the value they replace
	reads    []int32               // unknown reads
	byToken  unknownHeap
	nextID   int32
	// The window since the last quiescent cut, for the visualization,
	// and the states at that cut; and the whole key while it is small.
	cut       []traced
	window    []*history.Op
	windowOut bool
	whole     []*history.Op
	wholeOut  bool

	// The grant check.
	topToken uint64
	topBy    *history.Op
	granting map[uint64]*history.Op

	storageOps, grantOps int
	storageBad, grantBad bool
	storageMsg, grantMsg string
	storageBlame         []int64
	grantBlame           []int64
	failAt               *history.Op // the op no order can take
	failTime             int64       // when the first violation became certain
	grantTime            int64       // the call of the grant that broke the token order
	err                  error       // the check of this key could not go on
	steps                int         // configurations explored, for cancellation
	stop                 func() error
	onViolation          func(*keyCheck)
}

func newKeyCheck(key string, visMax int) *keyCheck {
	return &keyCheck{key: key, visMax: visMax, configs: []sconfig{{}}, cut: []traced{{}},
		unknown: map[int32]*history.Op{}, byPrev: map[int64][]int32{}, granting: map[uint64]*history.Op{},
		failTime: math.MaxInt64}
}

// add takes a completed op (or one the history never completed) of this key.
func (k *keyCheck) add(o *history.Op) {
	if !Relevant(o) {
		return
	}
	k.seq++
	if o.F == history.Acquire {
		k.grantOps++
		heap.Push(&k.grantPs, point{t: o.Call, seq: k.seq, op: o})
		heap.Push(&k.grantPs, point{t: o.Return, ret: true, seq: k.seq, op: o})
		return
	}
	k.storageOps++
	heap.Push(&k.storage, point{t: o.Call, seq: k.seq, op: o})
	if o.Type != history.Info {
		heap.Push(&k.storage, point{t: o.Return, ret: true, seq: k.seq, op: o})
	}
}

// done reports whether nothing more can change this key's verdict.
func (k *keyCheck) done() bool { return (k.storageBad && k.grantBad) || k.err != nil }

// advance decides every point earlier than the safe times: no op still
// pending can have a call or return before them. all decides every point.
func (k *keyCheck) advance(safeStorage, safeGrants int64, all bool) {
	if all {
		// Every point is known: a sorted slice is a heap already in
		// order, and walking it is cheaper than popping it.
		sort.Sort(k.grantPs)
		for _, p := range k.grantPs {
			if !k.grantBad && k.err == nil {
				k.grantPoint(p)
			}
		}
		k.grantPs = nil
		sort.Sort(k.storage)
		for i, p := range k.storage {
			k.storage[i] = point{}
			k.storagePoint(p)
		}
		k.storage = nil
		return
	}
	for len(k.grantPs) > 0 && (all || k.grantPs[0].t < safeGrants) {
		p := heap.Pop(&k.grantPs).(point)
		if !k.grantBad && k.err == nil {
			k.grantPoint(p)
		}
	}
	for len(k.storage) > 0 && (all || k.storage[0].t < safeStorage) {
		k.storagePoint(heap.Pop(&k.storage).(point))
	}
}

// storagePoint applies a storage point (an op's call or its return), unless
// the key's storage is already decided or its check was stopped.
func (k *keyCheck) storagePoint(p point) {
	if k.storageBad || k.err != nil {
		return
	}
	if p.ret {
		k.ret(p.op)
	} else {
		k.call(p.op)
	}
	k.poll()
}

// poll ends the key's check when the whole check was stopped.
func (k *keyCheck) poll() {
	if k.steps >= 1<<12 {
		k.steps = 0
		if k.stop != nil && k.err == nil {
			if err := k.stop(); err != nil {
				k.err = err
			}
		}
	}
}

func (k *keyCheck) grantPoint(p point) {
	o := p.op
	if p.ret {
		if k.granting[o.Token] == o {
			delete(k.granting, o.Token)
		}
		if o.Token > k.topToken {
			k.topToken, k.topBy = o.Token, o
		}
		return
	}
	var msg string
	var blame []int64
	switch {
	case k.granting[o.Token] != nil:
		a := k.granting[o.Token]
		msg = fmt.Sprintf("token %d was granted twice, to process %d at %s and to process %d at %s: tokens must only increase",
			o.Token, a.Process, secs(a.Return), o.Process, secs(o.Return))
		blame = culprits(o, a)
	case k.topBy != nil && k.topToken == o.Token:
		a := k.topBy
		msg = fmt.Sprintf("token %d was granted twice, to process %d at %s and to process %d at %s: tokens must only increase",
			o.Token, a.Process, secs(a.Return), o.Process, secs(o.Return))
		blame = culprits(o, a)
	case k.topBy != nil && k.topToken > o.Token:
		a := k.topBy
		msg = fmt.Sprintf("process %d was granted token %d at %s, but token %d had already been granted at %s (to process %d): tokens must only increase",
			o.Process, o.Token, secs(o.Return), a.Token, secs(a.Return), a.Process)
		blame = culprits(o, a)
	default:
		k.granting[o.Token] = o
		return
	}
	k.grantBad, k.grantMsg, k.grantBlame, k.grantTime = true, msg, blame, p.t
	k.violated(p.t)
}

func (k *keyCheck) violated(at int64) {
	if at < k.failTime {
		k.failTime = at
	}
	if k.onViolation != nil {
		k.onViolation(k)
	}
}

// keep records op in the window and, while the key is small, in the whole.
func (k *keyCheck) keep(o *history.Op) {
	if !k.windowOut {
		if len(k.window) >= k.visMax {
			k.window, k.windowOut = nil, true
		} else {
			k.window = append(k.window, o)
		}
	}
	if !k.wholeOut {
		if len(k.whole) >= k.visMax {
			k.whole, k.wholeOut = nil, true
		} else {
			k.whole = append(k.whole, o)
		}
	}
}

func (k *keyCheck) call(o *history.Op) {
	k.keep(o)
	if o.Type == history.Info {
		live := false
		for i := range k.configs {
			if !dead(k.configs[i].t.reg, o) {
				live = true
				break
			}
		}
		if !live {
			return // refused in every configuration from now on
		}
		id := k.nextID
		k.nextID++
		k.unknown[id] = o
		if o.F == history.Read {
			k.reads = append(k.reads, id)
		} else if o.Prev != nil {
			k.byPrev[*o.Prev] = append(k.byPrev[*o.Prev], id)
		}
		heap.Push(&k.byToken, unknownOp{op: o, id: id})
		k.compact()
		return
	}
	if k.nFlight >= maxInFlight {
		k.err = errTooConcurrent
		return
	}
	for i := range k.inFlight {
		if k.inFlight[i] == nil {
			k.inFlight[i] = o
			k.nFlight++
			return
		}
	}
}

func (k *keyCheck) slotOf(o *history.Op) int {
	for i, p := range k.inFlight {
		if p == o {
			return i
		}
	}
	return -1
}

// ret forces o to be placed in every configuration.
func (k *keyCheck) ret(o *history.Op) {
	s := k.slotOf(o)
	if s < 0 {
		return // its call was never taken (too many in flight)
	}
	var next []sconfig
	if len(k.configs) == 1 && k.nFlight == 1 && len(k.unknown) == 0 {
		// The common case: nothing else could come first.
		c := k.configs[0]
		if c.lin.has(s) {
			next = append(next, sconfig{t: c.t})
		} else {
			var buf [2]reg
			for _, r := range stepReg(c.t.reg, o, buf[:0]) {
				next = append(next, sconfig{t: retrace(c.t, r, o)})
			}
		}
		k.steps++
	} else {
		var seen, nextSeen keySet
		add := func(c sconfig) {
			if nextSeen.insert(c.key()) {
				next = append(next, c)
			}
		}
		for _, c := range k.configs {
			if c.lin.has(s) {
				c.lin = c.lin.without(s)
				add(c)
				continue
			}
			k.explore(c, o, s, &seen, add)
		}
	}
	k.inFlight[s] = nil
	k.nFlight--
	if k.err != nil {
		return // stopped while exploring: nothing is decided
	}
	if len(next) == 0 {
		k.storageBad = true
		k.failAt = o
		k.storageMsg, k.storageBlame = k.explainFail(o)
		k.violated(o.Return)
		return
	}
	k.configs = next
	k.compact()
}

// explore places o after any sequence of the other ops in flight and of
// the unknown ops that may take effect, from c, and adds every
// configuration that results.
func (k *keyCheck) explore(c sconfig, o *history.Op, s int, seen *keySet, add func(sconfig)) {
	stack := []sconfig{c}
	var buf [2]reg
	for len(stack) > 0 && k.err == nil {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		k.steps++
		k.poll()
		for _, r := range stepReg(x.t.reg, o, buf[:0]) {
			add(sconfig{t: retrace(x.t, r, o), lin: x.lin, fired: x.fired})
		}
		push := func(y sconfig) {
			if seen.insert(y.key()) {
				stack = append(stack, y)
			}
		}
		for i, p := range k.inFlight {
			if p == nil || i == s || x.lin.has(i) {
				continue
			}
			for _, r := range stepReg(x.t.reg, p, buf[:0]) {
				push(sconfig{t: retrace(x.t, r, p), lin: x.lin.with(i), fired: x.fired})
			}
		}
		try := func(id int32) {
			u := k.unknown[id]
			if u == nil || hasID(x.fired, id) {
				return
			}
			if r, ok := effect(x.t.reg, u); ok {
				push(sconfig{t: retrace(x.t, r, u), lin: x.lin, fired: withID(x.fired, id)})
			}
		}
		bucket := k.byPrev[x.t.value]
		for j, id := range bucket {
			// Unknown writes alike (same value, same token) are
			// interchangeable once called: let only the first of them
			// not yet taken take effect, or the configurations multiply
			// with every choice of which.
			if alikeBefore(k.unknown, x.fired, bucket[:j], k.unknown[id]) {
				continue
			}
			try(id)
		}
		for _, id := range k.reads {
			try(id)
		}
	}
}

// explainFail names what is wrong with o, which no configuration can place.
func (k *keyCheck) explainFail(o *history.Op) (string, []int64) {
	s := k.configs[0].t
	for _, c := range k.configs {
		// Prefer a state in which o itself is impossible.
		if len(stepReg(c.t.reg, o, nil)) == 0 {
			s = c.t
			break
		}
	}
	if len(stepReg(s.reg, o, nil)) > 0 {
		return fmt.Sprintf("no order of the ops up to process %d's %s at %s is consistent with fenced storage", o.Process, DescribeOp(o), secs(o.Return)), culprits(o, nil)
	}
	return sentence(o, s), culprits(o, blame(o, s))
}

// finish decides every point left: the history is complete.
func (k *keyCheck) finish() { k.advance(0, 0, true) }
