package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/bound"
)

// Check decides every key of a history against the fenced-storage model,
// in one pass over each key's calls and returns (see jit.go): its time and
// memory grow with the history and the ops in flight at once, not with the
// square of a key's ops. It reads ops and returns a result; its bounds on
// time and memory (opts.Timeout, opts.MemoryLimit) are internal/bound's.
func Check(ctx context.Context, ops []history.Op, opts Options) Result {
	opts.defaults()
	ctx, done := bound.Context(ctx, opts.Timeout, opts.MemoryLimit)
	defer done()
	start := time.Now()
	checks := map[string]*keyCheck{}
	var keys []string
	for i := range ops {
		o := &ops[i]
		k := checks[o.Key]
		if k == nil {
			k = newKeyCheck(o.Key, opts.VisualizeMaxOps)
			checks[o.Key] = k
			keys = append(keys, o.Key)
		}
		k.add(o)
	}
	sort.Strings(keys)
	eachKey(opts.Workers, len(keys), func(i int) {
		k := checks[keys[i]]
		k.stop = stopper(ctx)
		k.onViolation = opts.violation(start)
		k.finish()
	})
	return assemble(ctx, keys, checks, start, opts)
}

func stopper(ctx context.Context) func() error {
	return func() error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return nil
	}
}

// violation turns Options.OnViolation into a key's hook.
func (opts *Options) violation(start time.Time) func(*keyCheck) {
	if opts.OnViolation == nil {
		return nil
	}
	var mu sync.Mutex
	return func(k *keyCheck) {
		mu.Lock()
		defer mu.Unlock()
		opts.OnViolation(k.result(nil, start))
	}
}

// result is the key's verdict; stopped is why the whole check ended
// early, if it did.
func (k *keyCheck) result(stopped error, start time.Time) KeyResult {
	kr := KeyResult{Key: k.key, Ops: k.storageOps + k.grantOps, CheckMillis: time.Since(start).Milliseconds(), model: FencedStorage()}
	switch {
	case k.grantBad:
		kr.Verdict, kr.Explanation, kr.Culprits, kr.at = Invalid, k.grantMsg, k.grantBlame, k.grantTime
	case k.storageBad:
		kr.Verdict, kr.Explanation, kr.Culprits, kr.at = Invalid, k.storageMsg, k.storageBlame, k.failTime
	case k.err != nil:
		kr.Verdict, kr.Explanation = Unknown, fmt.Sprintf("key %s: %s", k.key, stopMessage(k.err))
	case stopped != nil:
		kr.Verdict, kr.Explanation = Unknown, fmt.Sprintf("key %s: %s", k.key, stopMessage(stopped))
	default:
		kr.Verdict = Valid
	}
	return kr
}

// assemble sums up the keys and keeps porcupine's visualization where it
// is small enough: the whole key, or the window of the violation.
func assemble(ctx context.Context, keys []string, checks map[string]*keyCheck, start time.Time, opts Options) Result {
	var stopped error
	if ctx.Err() != nil {
		stopped = context.Cause(ctx)
	}
	res := Result{Keys: make([]KeyResult, len(keys))}
	storageOps := 0
	for i, key := range keys {
		k := checks[key]
		storageOps += k.storageOps
		res.Keys[i] = k.result(stopped, start)
		if res.Keys[i].Verdict != Unknown && stopped == nil {
			k.visualize(ctx, &res.Keys[i])
		}
		res.Keys[i].CheckMillis = time.Since(start).Milliseconds()
	}
	return verdictOf(res, storageOps)
}

// visualize runs porcupine over what the key kept, for its visualization:
// the whole key while it is small, else the window from the last quiescent
// cut to the violation. It changes no verdict.
func (k *keyCheck) visualize(ctx context.Context, kr *KeyResult) {
	var ops []*history.Op
	init := []traced{{}}
	switch {
	case !k.wholeOut:
		ops = k.whole
	case k.storageBad && !k.windowOut:
		ops, init = k.window, k.cut
	default:
		return
	}
	if len(ops) == 0 {
		return
	}
	pops := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		pops[i] = porcupine.Operation{ClientId: o.Process, Input: o, Output: o, Call: o.Call, Return: o.Return}
	}
	boundUnknownOps(pops)
	states := make(regs, len(init))
	for i, t := range init {
		states[i] = t.reg
	}
	model := fencedStorageFrom(states.normalize())
	r, info, stopped := search(ctx, model, pops, true)
	if stopped != nil {
		return
	}
	if (r == porcupine.Illegal) == k.storageBad {
		kr.info, kr.model = &info, model
	}
}

// fencedStorageFrom is FencedStorage starting from the given states.
func fencedStorageFrom(init regs) porcupine.Model {
	m := FencedStorage()
	if len(init) == 1 && init[0] == (reg{}) {
		return m
	}
	m.Init = func() interface{} { return state{storage: append(regs(nil), init...)} }
	return m
}

// Stream checks a history while it is read or recorded, one event at a
// time, holding only the ops in flight and the windows still open. Add
// the events in the history's order, then Finish.
type Stream struct {
	ctx    context.Context
	done   func()
	opts   Options
	start  time.Time
	pairer *history.Pairer
	keys   map[string]*keyStream
	n      int64
	hook   func(*keyCheck)
}

type keyStream struct {
	check *keyCheck
	// Reads and writes, and acquires, invoked and not yet completed, in
	// invocation order (completed ones are dropped from the front).
	storage, grants pendingQueue
}

type pendingQueue struct {
	ops  []*history.Op
	head int
}

func (q *pendingQueue) push(o *history.Op) { q.ops = append(q.ops, o) }

// safe is the earliest time a pending op's call may still come.
func (q *pendingQueue) safe() int64 {
	for q.head < len(q.ops) && q.ops[q.head].Completed() {
		q.ops[q.head] = nil
		q.head++
	}
	if q.head > 64 && q.head*2 > len(q.ops) {
		q.ops = append(q.ops[:0], q.ops[q.head:]...)
		q.head = 0
	}
	if q.head == len(q.ops) {
		return math.MaxInt64
	}
	return q.ops[q.head].Call
}

// NewStream starts a streaming check bounded by opts (Timeout counts from
// here). Finish must be called to release it.
func NewStream(ctx context.Context, opts Options) *Stream {
	opts.defaults()
	s := &Stream{opts: opts, start: time.Now(), pairer: history.NewPairer(), keys: map[string]*keyStream{}}
	s.ctx, s.done = bound.Context(ctx, s.opts.Timeout, s.opts.MemoryLimit)
	s.hook = s.opts.violation(s.start)
	return s
}

// ErrStopped is what Add returns once the check was stopped (timeout,
// memory bound, cancellation): read no further, call Finish.
var ErrStopped = errors.New("the check was stopped")

// Add takes the next event of a validated history.
func (s *Stream) Add(e history.Event) error {
	s.n++
	if s.n&1023 == 0 && s.ctx.Err() != nil {
		return ErrStopped
	}
	o, complete := s.pairer.Add(e)
	if o == nil {
		return nil
	}
	ks := s.keys[o.Key]
	if ks == nil {
		ks = &keyStream{check: newKeyCheck(o.Key, s.opts.VisualizeMaxOps)}
		ks.check.stop = stopper(s.ctx)
		ks.check.onViolation = s.hook
		s.keys[o.Key] = ks
	}
	if !complete {
		switch o.F {
		case history.Read, history.Write:
			ks.storage.push(o)
		case history.Acquire:
			ks.grants.push(o)
		}
		return nil
	}
	if ks.check.done() {
		return nil
	}
	ks.check.add(o)
	ks.check.advance(ks.storage.safe(), ks.grants.safe(), false)
	return nil
}

// Finish decides what is left (ops never completed are unknown) and
// returns the verdict.
func (s *Stream) Finish() Result {
	defer s.done()
	for _, o := range s.pairer.Pending() {
		s.keys[o.Key].check.add(o)
	}
	var keys []string
	checks := map[string]*keyCheck{}
	for key, ks := range s.keys {
		keys = append(keys, key)
		checks[key] = ks.check
	}
	sort.Strings(keys)
	for _, key := range keys {
		if s.ctx.Err() != nil {
			break
		}
		checks[key].finish()
	}
	return assemble(s.ctx, keys, checks, s.start, s.opts)
}

// ReadStats count what a streaming check read.
type ReadStats struct {
	Events int64
	// Lines is the number of non-blank lines; Dropped the number of a
	// last line cut by a kill and left out (0: none), as history.Load.
	Lines, Dropped int
	// Unfinished says why the history is not a finished run's
	// (history.History.Unfinished), "" when it is; it is known only when
	// the whole history was read (Complete).
	Unfinished string
	// Complete: the read reached the end of the history (the check did
	// not stop it first).
	Complete bool
}

// CheckReader checks a history as it reads it (JSON Lines, as
// docs/history.md describes), never holding it whole. A history that is
// not well formed returns its *history.ParseError and no result; a last
// line cut by a kill is left out, as history.Load does, and ReadStats
// says so.
func CheckReader(ctx context.Context, r io.Reader, opts Options) (Result, ReadStats, error) {
	s := NewStream(ctx, opts)
	var st ReadStats
	h, err := history.LoadEach(r, func(e history.Event) error {
		st.Events++
		return s.Add(e)
	})
	st.Lines, st.Dropped = h.Lines, h.Dropped
	if err != nil && !errors.Is(err, ErrStopped) {
		s.done()
		return Result{}, st, err
	}
	if err == nil {
		st.Complete, st.Unfinished = true, h.Unfinished()
	}
	return s.Finish(), st, nil
}
