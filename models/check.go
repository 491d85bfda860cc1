package models

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/bound"
	"github.com/fencecheck/fencecheck/internal/words"
)

// Verdict is the outcome of a check, as Jepsen reports it.
type Verdict string

const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	// Unknown: the check did not finish (timeout, interrupt) or there was
	// nothing to check. Never read it as valid.
	Unknown Verdict = "unknown"
)

// KeyResult is the verdict on one lock key and its resource.
type KeyResult struct {
	Key     string  `json:"key"`
	Verdict Verdict `json:"verdict"`
	// Ops counts the ops the search had to place (see Relevant).
	Ops int `json:"ops"`
	// Explanation says in one sentence what went wrong, when it did.
	Explanation string `json:"explanation,omitempty"`
	// Culprits are the history indexes (of the invokes) of the ops that
	// cannot be linearized, and of the op they conflict with.
	Culprits []int64 `json:"culprits,omitempty"`
	// CheckMillis is how long the search took.
	CheckMillis int64 `json:"check_ms"`

	info  *porcupine.LinearizationInfo
	model porcupine.Model
	// at is when an invalid key's violation happened (ns; 0 when not
	// known): the run names the key whose violation came first.
	at int64
}

// Visualize writes porcupine's own visualization of this key, if the
// search kept the data for it.
func (k *KeyResult) Visualize(w interface{ Write([]byte) (int, error) }, faults []history.Fault) error {
	if k.info == nil {
		return fmt.Errorf("no linearization data kept for key %q", k.Key)
	}
	k.info.AddAnnotations(Annotations(faults))
	return porcupine.Visualize(k.model, *k.info, w)
}

// CanVisualize reports whether Visualize has data.
func (k *KeyResult) CanVisualize() bool { return k.info != nil }

// Result is the verdict on a whole history.
type Result struct {
	Verdict     Verdict     `json:"verdict"`
	Keys        []KeyResult `json:"keys"`
	Explanation string      `json:"explanation,omitempty"`
	// Exposures are the moments safety was at stake (exposure.go); nil
	// until WithExposures counts them.
	Exposures *Exposures `json:"exposures,omitempty"`
	// Agreement is what the servers held at the end (agreement.go); nil
	// when they were not asked.
	Agreement *Agreement `json:"agreement,omitempty"`
	// PowerCuts are the run's power cuts and the grants after them
	// (postcut.go); nil until WithPowerCuts counts them, and for a run
	// under no power fault.
	PowerCuts *PowerCuts `json:"power_cuts,omitempty"`
	// Crashes are the run's crashes and the grants after each
	// (postcrash.go); nil until WithCrashes counts them, and for a run
	// with no crash.
	Crashes *Crashes `json:"crashes,omitempty"`
}

// Options tune a check.
type Options struct {
	// Timeout bounds the whole check; 0 means none. Keys not decided
	// when it runs out are unknown.
	Timeout time.Duration
	// MemoryLimit bounds the process's heap during the check, in bytes; 0
	// means none. The garbage collector is asked to keep under it; should
	// the heap reach it anyway, keys not decided are unknown.
	MemoryLimit int64
	// VisualizeMaxOps: porcupine's visualization is kept for a key of at
	// most this many ops, or for the window around its violation when
	// that is at most this long (larger would be too large to open).
	// 0: 20,000.
	VisualizeMaxOps int
	// Workers checking keys in parallel (Check); 0: GOMAXPROCS.
	Workers int
	// OnViolation, when set, hears of each key's first violation the
	// moment it is certain (a streaming check calls it as the history is
	// read). The key's result is final except for its visualization.
	OnViolation func(KeyResult)
	// unbounded leaves unknown ops open to the end (tests compare).
	unbounded bool
}

func (opts *Options) defaults() {
	if opts.VisualizeMaxOps == 0 {
		opts.VisualizeMaxOps = 20000
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
}

// CheckWhole is the checker before streaming: it hands porcupine each
// key's storage ops as one partition. Its memory grows with the square of
// a key's op count, so it serves only to compare against Check (tests and
// benchmarks); the verdicts are the same.
func CheckWhole(ctx context.Context, ops []history.Op, opts Options) Result {
	opts.defaults()
	ctx, done := bound.Context(ctx, opts.Timeout, opts.MemoryLimit)
	defer done()
	// The storage half of each key goes to porcupine; the lease half (the
	// grants) is decided directly, see checkGrants.
	byKey := map[string][]porcupine.Operation{}
	grants := map[string][]*history.Op{}
	var keys []string
	storageOps := 0
	for i := range ops {
		o := &ops[i]
		if _, seen := byKey[o.Key]; !seen {
			keys = append(keys, o.Key)
			byKey[o.Key] = nil
		}
		if !Relevant(o) {
			continue
		}
		if o.F == history.Acquire {
			grants[o.Key] = append(grants[o.Key], o)
			continue
		}
		storageOps++
		byKey[o.Key] = append(byKey[o.Key], porcupine.Operation{
			ClientId: o.Process, Input: o, Output: o, Call: o.Call, Return: o.Return,
		})
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !opts.unbounded {
			boundUnknownOps(byKey[k])
		}
	}
	res := Result{Keys: make([]KeyResult, len(keys))}
	eachKey(opts.Workers, len(keys), func(i int) {
		res.Keys[i] = checkKey(ctx, keys[i], byKey[keys[i]], grants[keys[i]], opts)
	})
	return verdictOf(res, storageOps)
}

// eachKey calls f(i) for every i below n on workers goroutines, handing
// the keys out in order, and returns once every call has: one key's
// check shares nothing with another's, so they run side by side, and f
// writes only what belongs to key i.
func eachKey(workers, n int, f func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// verdictOf sums up the keys' verdicts.
func verdictOf(res Result, storageOps int) Result {
	res.Verdict = Valid
	for _, k := range res.Keys {
		switch {
		case k.Verdict == Invalid:
			res.Verdict = Invalid
		case k.Verdict == Unknown && res.Verdict == Valid:
			res.Verdict = Unknown
		}
	}
	switch res.Verdict {
	case Invalid:
		// The run is told by the violation that came first in time (a
		// failover that took every key's counter back is named by the first
		// token that went down, not by the key first in name order); keys
		// whose time is not known come in name order after those whose is.
		n, first := 0, -1
		for i, k := range res.Keys {
			if k.Verdict != Invalid {
				continue
			}
			n++
			if first < 0 || (k.at != 0 && (res.Keys[first].at == 0 || k.at < res.Keys[first].at)) {
				first = i
			}
		}
		res.Explanation = res.Keys[first].Explanation
		if n > 1 {
			res.Explanation += fmt.Sprintf(" (and %d more %s invalid)", n-1, words.Noun(n-1, "key"))
		}
	case Unknown:
		res.Explanation = "the check did not finish for every key"
		for _, k := range res.Keys {
			if k.Verdict == Unknown && k.Explanation != "" {
				res.Explanation = k.Explanation
				break
			}
		}
	case Valid:
		if storageOps == 0 {
			res.Verdict = Unknown
			res.Explanation = "nothing to check: no read or write reached the storage"
		}
	}
	return res
}

// faultText names a fault and its targets: "pause on c1 and c2".
func faultText(f history.Fault) string {
	if len(f.Nodes) == 0 {
		return f.F
	}
	return f.F + " on " + words.List(f.Nodes)
}

// Annotations turns fault intervals into porcupine annotations.
func Annotations(faults []history.Fault) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range faults {
		end := f.End
		if end == 1<<63-1 {
			end = f.Start
		}
		out = append(out, porcupine.Annotation{
			Tag: "nemesis", Start: f.Start, End: end,
			Description: faultText(f), Details: f.Error,
			BackgroundColor: "#fde2c8",
		})
	}
	return out
}

func checkKey(ctx context.Context, key string, ops []porcupine.Operation, grants []*history.Op, opts Options) KeyResult {
	kr := checkStorage(ctx, key, ops, opts)
	kr.Ops += len(grants)
	// Grants that break the token order come first: they are the cause
	// of whatever the storage then saw (a lock service whose counter
	// restarted hands out old tokens again).
	if msg, culprits, bad := checkGrants(grants); bad {
		kr.Verdict = Invalid
		kr.Explanation = msg
		kr.Culprits = culprits
	}
	return kr
}

// checkGrants decides the lease half of a key without a search. The model
// admits a grant only above every earlier one, so the one order the grants
// can take is by token; it is a linearization if and only if each grant
// can be placed in its interval after the previous one — greedily, at
// max(its call, the latest call of the lower tokens) — that is, unless a
// grant returned before a grant of a lower token was even asked for. A
// token granted twice is never possible. O(n log n), where porcupine's
// search over up to (clients − 1) acquires waiting at once was the
// slowest part of a hot key's check.
func checkGrants(grants []*history.Op) (msg string, blamed []int64, bad bool) {
	g := append([]*history.Op(nil), grants...)
	sort.SliceStable(g, func(i, j int) bool { return g[i].Token < g[j].Token })
	var latest *history.Op // the lower-token grant asked for last
	for i, o := range g {
		if i > 0 && g[i-1].Token == o.Token {
			a, b := g[i-1], o
			return fmt.Sprintf("token %d was granted twice, to process %d at %s and to process %d at %s: tokens must only increase",
				o.Token, a.Process, secs(a.Return), b.Process, secs(b.Return)), culprits(b, a), true
		}
		if latest != nil && o.Return < latest.Call {
			return fmt.Sprintf("process %d was granted token %d at %s, but token %d had already been granted at %s (to process %d): tokens must only increase",
				latest.Process, latest.Token, secs(latest.Return), o.Token, secs(o.Return), o.Process), culprits(latest, o), true
		}
		if latest == nil || o.Call > latest.Call {
			latest = o
		}
	}
	return "", nil, false
}

// checkStorage searches the storage half of a key with porcupine.
func checkStorage(ctx context.Context, key string, ops []porcupine.Operation, opts Options) KeyResult {
	kr := KeyResult{Key: key, Ops: len(ops), model: FencedStorage()}
	if ctx.Err() != nil {
		kr.Verdict = Unknown
		kr.Explanation = fmt.Sprintf("key %s: %s", key, stopMessage(context.Cause(ctx)))
		return kr
	}
	start := time.Now()
	verbose := len(ops) <= opts.VisualizeMaxOps
	r, info, stopped := search(ctx, kr.model, ops, verbose)
	kr.CheckMillis = time.Since(start).Milliseconds()
	if stopped != nil {
		kr.Verdict = Unknown
		kr.Explanation = fmt.Sprintf("key %s: %s", key, stopMessage(stopped))
		return kr
	}
	switch r {
	case porcupine.Ok:
		kr.Verdict = Valid
	case porcupine.Unknown:
		kr.Verdict = Unknown
		kr.Explanation = fmt.Sprintf("key %s: the search timed out after %s with %d ops", key, time.Since(start).Round(time.Millisecond), len(ops))
	case porcupine.Illegal:
		kr.Verdict = Invalid
		if verbose {
			kr.Explanation, kr.Culprits = Explain(ops, info, kr.model)
		} else {
			kr.Explanation = fmt.Sprintf("key %s: no order of its %d ops is consistent with fenced storage (too many ops to name the culprit)", key, len(ops))
		}
	}
	if verbose {
		kr.info = &info
	}
	return kr
}

// boundUnknownOps ends the search interval of every read or write whose
// outcome is unknown at the first moment it can no longer take effect: the
// return of an ok read or write with a higher token. That op was admitted
// before its return, so from then on the fenced storage refuses the
// unknown op's token in every linearization — placing the unknown op later
// is the same as its not taking effect, which the model allows anywhere.
// Without the bound an unknown op stays concurrent with every later op, and
// on a hot key the search doubles with each one (bench: "1 key, 20
// clients, 2% info"). Only the porcupine operations change; the ops in the
// history keep their times.
func boundUnknownOps(ops []porcupine.Operation) {
	type admitted struct {
		token uint64
		ret   int64
	}
	var oks []admitted
	for i := range ops {
		o := ops[i].Input.(*history.Op)
		if o.F != history.Acquire && o.Type == history.OK {
			oks = append(oks, admitted{o.Token, ops[i].Return})
		}
	}
	if len(oks) == 0 {
		return
	}
	// By token, highest first; earliest[i] is the earliest return among
	// oks[:i+1], every op with a token at least oks[i].token.
	sort.Slice(oks, func(i, j int) bool { return oks[i].token > oks[j].token })
	earliest := make([]int64, len(oks))
	for i, a := range oks {
		earliest[i] = a.ret
		if i > 0 {
			earliest[i] = min(earliest[i], earliest[i-1])
		}
	}
	for i := range ops {
		o := ops[i].Input.(*history.Op)
		if o.F == history.Acquire || o.Type != history.Info {
			continue
		}
		// The oks with a token strictly higher than o's: oks[:n].
		n := sort.Search(len(oks), func(j int) bool { return oks[j].token <= o.Token })
		if n == 0 {
			continue
		}
		ops[i].Return = max(earliest[n-1], ops[i].Call+1)
	}
}

// search runs porcupine on ops and waits for it. When ctx ends first, the
// model refuses every further step, so the search runs out at once
// instead of going on in the background; stopped is then ctx's cause.
func search(ctx context.Context, model porcupine.Model, ops []porcupine.Operation, verbose bool) (r porcupine.CheckResult, info porcupine.LinearizationInfo, stopped error) {
	var halt atomic.Bool
	defer context.AfterFunc(ctx, func() { halt.Store(true) })()
	inner := model.Step
	model.Step = func(s, in, out interface{}) (bool, interface{}) {
		if halt.Load() {
			return false, s
		}
		return inner(s, in, out)
	}
	if verbose {
		r, info = porcupine.CheckOperationsVerbose(model, ops, 0)
	} else {
		r = porcupine.CheckOperationsTimeout(model, ops, 0)
	}
	if halt.Load() {
		return porcupine.Unknown, porcupine.LinearizationInfo{}, context.Cause(ctx)
	}
	return r, info, nil
}

// stopMessage says why a check stopped, in the words a user needs.
func stopMessage(cause error) string {
	var te *bound.TimeoutError
	var me *bound.MemoryError
	switch {
	case errors.As(cause, &te), errors.As(cause, &me):
		return cause.Error()
	case errors.Is(cause, errTooConcurrent):
		return cause.Error()
	}
	return "the check was interrupted"
}
