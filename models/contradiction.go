package models

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
)

// A lock service that forgets what it acknowledged — a counter kept only
// in memory, a grant never fsynced, a replica promoted before it had the
// last writes — contradicts its own grants afterwards. Contradicted grants
// count that, from the history alone, beside the exposures:
//
//   - A grant is an ok acquire that carries a token (token 0 is a recipe
//     without tokens: such grants are never counted, as the check places
//     none of them). Its interval is its call to its return, the same
//     times the check uses.
//   - Granted twice: a grant whose token another grant of the same key
//     already carried. A token held by k grants counts k − 1: every grant
//     of it but the one that returned first. No correct history has one:
//     fenced storage admits a write whose token equals the highest it has
//     seen, so two holders of one token cannot be told apart.
//   - Went down: a grant B for which some grant A of the same key with a
//     higher token had returned before B was called (A's return < B's
//     call). Grants whose intervals overlap are not counted, whatever
//     their tokens: the service may have granted the higher token first.
//     A grant can both go down and repeat a token; it is counted in both.
//   - Contradicted is the grants counted in either, each once.
//
// Each count is positive exactly when the check finds the key's grants
// out of token order (checkGrants): a key with a contradicted grant is
// invalid, and a key whose grants the check accepts has none.
//
// Not counted: two holders of one lock at once after a restart (a grant
// made while another process still believed it held the lock). The
// history cannot tell that from a lease that ran out: it records neither
// a lease's length nor its renewals, and a crash fault outlasts a lease
// by default, so a service that granted the lock anew after a restart was
// usually right to. Such overlaps are counted by stats.overlaps and, when
// the old holder acted, as exposures.
//
// After crash counts the contradicted grants whose contradiction has a
// crash between (Crash): a fault that stopped a server's process began
// after the acknowledged grant returned and before the contradicting one
// returned. After failover counts, apart, those with no crash between but
// a failover of the lock service's own (a replica promoted: no process
// stopped, and what it had not received is lost all the same). A failover
// is never called a crash.

// Contradiction kinds.
const (
	GrantedTwice = "granted-twice"
	WentDown     = "went-down"
)

// Contradiction is one grant that contradicted an acknowledged one.
type Contradiction struct {
	Key string `json:"key"`
	// Kind is granted-twice or went-down.
	Kind string `json:"kind"`
	// The acknowledged grant: for granted-twice, the previous grant of the
	// same token; for went-down, the grant of the highest token that had
	// returned before the contradicting one was called. Op is the history
	// index of its invocation, Time its return (ns).
	Token   uint64 `json:"token"`
	Process int    `json:"process"`
	Op      int64  `json:"op"`
	Time    int64  `json:"time"`
	// The grant that contradicted it, likewise.
	LaterToken   uint64 `json:"later_token"`
	LaterProcess int    `json:"later_process"`
	LaterOp      int64  `json:"later_op"`
	LaterTime    int64  `json:"later_time"`
	// Crash names the first crash between the two ("power-loss on n2")
	// and CrashTime is when it began (ns); CrashesBetween counts them all.
	// Omitted when there was none.
	Crash          string `json:"crash,omitempty"`
	CrashTime      int64  `json:"crash_time,omitempty"`
	CrashesBetween int    `json:"crashes_between,omitempty"`
	// Failover names the first failover between the two ("failover to
	// n3") when no crash was, and FailoverTime is when it began (ns).
	Failover     string `json:"failover,omitempty"`
	FailoverTime int64  `json:"failover_time,omitempty"`
}

// ContradictionCounts are the contradicted grants of a key or of a run.
type ContradictionCounts struct {
	// Grants counts the grants that carry a token: what could be
	// contradicted.
	Grants int `json:"grants"`
	// Contradicted counts the grants that are granted twice or went down
	// (or both), each once.
	Contradicted int `json:"contradicted"`
	GrantedTwice int `json:"granted_twice"`
	WentDown     int `json:"went_down"`
	// AfterCrash counts the contradicted grants with a crash between them
	// and a grant they contradict.
	AfterCrash int `json:"after_crash"`
	// AfterFailover counts the other contradicted grants with a failover
	// of the lock service's own between them and a grant they contradict.
	AfterFailover int `json:"after_failover"`
}

// Add pools other into c.
func (c *ContradictionCounts) Add(o ContradictionCounts) {
	c.Grants += o.Grants
	c.Contradicted += o.Contradicted
	c.GrantedTwice += o.GrantedTwice
	c.WentDown += o.WentDown
	c.AfterCrash += o.AfterCrash
	c.AfterFailover += o.AfterFailover
}

// KeyContradictions are one key's counts.
type KeyContradictions struct {
	Key string `json:"key"`
	ContradictionCounts
}

// MaxListedContradictions bounds Contradictions.List.
const MaxListedContradictions = 100

// Contradictions are a run's contradicted grants: the totals, per key (in
// name order), and the first ones one by one.
type Contradictions struct {
	ContradictionCounts
	Keys []KeyContradictions `json:"keys"`
	// List holds the first MaxListedContradictions contradictions in the
	// order of the contradicting grants' returns; a grant that both went
	// down and repeated a token is listed once for each.
	List []Contradiction `json:"list,omitempty"`
}

// crashFaults are the faults that stop a lock server's process, so that
// it keeps only what it had made durable: the nemesis words. A failpoint
// counts: armed to panic, it stops the server at the place in its code it
// names (nemesis's failpoint fault), and its heal starts it again.
var crashFaults = []string{"kill", "kill-leader", "power-loss", "power-loss-leader", "power-loss-all", "power-loss-majority", "failpoint"}

// FailoverEvent is the event a lock service's own failover is recorded
// as (a replica promoted by the service, harness.FailoverEvent): not a
// crash, though the promoted replica keeps only what it had received.
const FailoverEvent = "failover"

// losesGrants reports whether a fault of history f can take an
// acknowledged grant with it: a crash or a failover.
func losesGrants(f string) bool { return Crash(f) || f == FailoverEvent }

// CrashFaults lists the faults Crash holds to be crashes.
func CrashFaults() []string { return slices.Clone(crashFaults) }

// Crash reports whether a fault of history f stops a server's process:
// a kill or a power loss. Such a fault can take with it what the lock
// service acknowledged and never made durable. A failover is not one.
func Crash(f string) bool { return slices.Contains(crashFaults, f) }

// crashText names a crash: "power-loss on n2", "the failover to n3".
func crashText(f history.Fault) string {
	if f.F == "failover" && len(f.Nodes) > 0 {
		// A failover's nodes are the new leader once it was named, the old
		// one before.
		if f.End != math.MaxInt64 && f.Error == "" {
			return "failover to " + words.List(f.Nodes)
		}
		return "failover of " + words.List(f.Nodes)
	}
	return faultText(f)
}

// crashesBetween are the crashes that began strictly after t1 and before
// t3, in order.
func crashesBetween(faults []history.Fault, t1, t3 int64) []history.Fault {
	return faultsBetween(faults, t1, t3, Crash)
}

// faultsBetween are the faults of a kind that began strictly after t1 and
// before t3, in order.
func faultsBetween(faults []history.Fault, t1, t3 int64, kind func(string) bool) []history.Fault {
	var out []history.Fault
	for _, f := range faults {
		if kind(f.F) && f.Start > t1 && f.Start < t3 {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// grantsOf are the ops Contradictions counts, by key.
func grantsOf(ops []history.Op) map[string][]*history.Op {
	by := map[string][]*history.Op{}
	for i := range ops {
		o := &ops[i]
		if o.F == history.Acquire && Relevant(o) {
			by[o.Key] = append(by[o.Key], o)
		}
	}
	return by
}

// CountContradictions counts a history's contradicted grants; faults are
// its fault intervals (history.Pair), for the crashes between.
func CountContradictions(ops []history.Op, faults []history.Fault) Contradictions {
	by := grantsOf(ops)
	names := make([]string, 0, len(by))
	for k := range by {
		names = append(names, k)
	}
	sort.Strings(names)
	x := Contradictions{Keys: []KeyContradictions{}}
	var list []Contradiction
	for _, k := range names {
		c, l := keyContradictions(k, by[k], faults)
		x.Keys = append(x.Keys, KeyContradictions{Key: k, ContradictionCounts: c})
		x.Add(c)
		list = append(list, l...)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].LaterTime < list[j].LaterTime })
	if len(list) > MaxListedContradictions {
		list = list[:MaxListedContradictions]
	}
	x.List = list
	return x
}

// keyContradictions counts one key's grants.
func keyContradictions(key string, grants []*history.Op, faults []history.Fault) (ContradictionCounts, []Contradiction) {
	var c ContradictionCounts
	var list []Contradiction
	contradicted := map[*history.Op]bool{}
	crashed, failedOver := map[*history.Op]bool{}, map[*history.Op]bool{}
	note := func(kind string, a, b *history.Op) {
		x := Contradiction{Key: key, Kind: kind, Token: a.Token, Process: a.Process, Op: a.InvokeIndex, Time: a.Return,
			LaterToken: b.Token, LaterProcess: b.Process, LaterOp: b.InvokeIndex, LaterTime: b.Return}
		if cs := crashesBetween(faults, a.Return, b.Return); len(cs) > 0 {
			x.Crash, x.CrashTime, x.CrashesBetween = crashText(cs[0]), cs[0].Start, len(cs)
			crashed[b] = true
		} else if fs := faultsBetween(faults, a.Return, b.Return, func(f string) bool { return f == FailoverEvent }); len(fs) > 0 {
			x.Failover, x.FailoverTime = crashText(fs[0]), fs[0].Start
			failedOver[b] = true
		}
		contradicted[b] = true
		list = append(list, x)
	}

	// Granted twice: in order of return, each grant against the previous
	// grant of its token.
	byReturn := slices.Clone(grants)
	sort.SliceStable(byReturn, func(i, j int) bool {
		a, b := byReturn[i], byReturn[j]
		return a.Return < b.Return || (a.Return == b.Return && a.InvokeIndex < b.InvokeIndex)
	})
	prev := map[uint64]*history.Op{}
	for _, g := range byReturn {
		if a := prev[g.Token]; a != nil {
			c.GrantedTwice++
			note(GrantedTwice, a, g)
		}
		prev[g.Token] = g
	}

	// Went down: in order of call, each grant against the highest token
	// returned before it was called.
	byCall := slices.Clone(grants)
	sort.SliceStable(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	var top *history.Op
	next := 0
	for _, g := range byCall {
		for next < len(byReturn) && byReturn[next].Return < g.Call {
			if r := byReturn[next]; top == nil || r.Token > top.Token {
				top = r
			}
			next++
		}
		if top != nil && top.Token > g.Token {
			c.WentDown++
			note(WentDown, top, g)
		}
	}
	for b := range failedOver {
		if crashed[b] {
			delete(failedOver, b) // a crash between it and another grant names it
		}
	}
	c.Grants, c.Contradicted, c.AfterCrash, c.AfterFailover = len(grants), len(contradicted), len(crashed), len(failedOver)
	return c, list
}

// Text is the counts in one clause: "3 of 412 acknowledged grants were
// contradicted (3 tokens granted twice, 2 tokens went down; 3 after a
// crash)"; "none of 412 acknowledged grants was contradicted".
func (c ContradictionCounts) Text() string {
	switch {
	case c.Grants == 0:
		return "no grant carried a token, so none could be contradicted"
	case c.Contradicted == 0:
		return fmt.Sprintf("none of %s was contradicted", words.PluralOf(c.Grants, "acknowledged grant", "acknowledged grants"))
	}
	s := fmt.Sprintf("%d of %s contradicted (%s", c.Contradicted, words.PluralOf(c.Grants, "acknowledged grant was", "acknowledged grants were"), c.breakdown())
	if c.Contradicted == 1 && c.Grants > 1 {
		s = fmt.Sprintf("1 of %d acknowledged grants was contradicted (%s", c.Grants, c.breakdown())
	}
	if c.AfterCrash > 0 {
		s += fmt.Sprintf("; %d after a crash", c.AfterCrash)
	}
	if c.AfterFailover > 0 {
		s += fmt.Sprintf("; %d after a failover", c.AfterFailover)
	}
	return s + ")"
}

// Short is the counts as an index row or a summary line says them: "3
// contradicted grants: 2 granted twice, 1 went down".
func (c ContradictionCounts) Short() string {
	s := words.Plural(c.Contradicted, "contradicted grant")
	if c.Contradicted == 0 {
		return s
	}
	return s + ": " + c.breakdown()
}

func (c ContradictionCounts) breakdown() string {
	var parts []string
	if c.GrantedTwice > 0 {
		parts = append(parts, fmt.Sprintf("%s granted twice", words.Plural(c.GrantedTwice, "token")))
	}
	if c.WentDown > 0 {
		parts = append(parts, fmt.Sprintf("%s went down", words.PluralOf(c.WentDown, "token", "tokens")))
	}
	return strings.Join(parts, ", ")
}

// CrashFirst tells the loss in the sentence of each key the check found
// invalid for its token order, when a crash lies between the grant that
// was acknowledged and the one that contradicted it: "token 7 was
// acknowledged at 4.20 s (to process 3), the power-loss on n2 at 5.01 s
// lost it, and it was granted again at 9.33 s (to process 1): tokens must
// only increase" (or "… and the tokens went down to 5 at 9.33 s (granted
// to process 1): …"). The two grants are the key's culprits; the crash is the
// first that began after the acknowledged grant returned and before the
// other returned (Crash). Without a crash between, or for any other
// violation, the sentence stays as it was; no verdict changes.
func CrashFirst(res Result, ops []history.Op, faults []history.Fault) Result {
	if res.Verdict != Invalid || !slices.ContainsFunc(faults, func(f history.Fault) bool { return losesGrants(f.F) }) {
		return res
	}
	res.Keys = slices.Clone(res.Keys)
	first := true
	for i := range res.Keys {
		k := &res.Keys[i]
		if k.Verdict != Invalid {
			continue
		}
		old := k.Explanation
		if msg, ok := crashStory(ops, faults, k.Culprits, old); ok {
			k.Explanation = msg
		}
		if first && strings.HasPrefix(res.Explanation, old) {
			first = false
			res.Explanation = k.Explanation + strings.TrimPrefix(res.Explanation, old)
		}
	}
	return res
}

// crashStory retells a broken token order whose two grants have a crash
// between them.
func crashStory(ops []history.Op, faults []history.Fault, blamed []int64, old string) (string, bool) {
	if len(blamed) < 2 || !strings.HasSuffix(old, "tokens must only increase") {
		return "", false
	}
	var a, b *history.Op
	for i := range ops {
		o := &ops[i]
		switch o.InvokeIndex {
		case blamed[0]:
			b = o
		case blamed[1]:
			a = o
		}
	}
	if a == nil || b == nil || a.F != history.Acquire || b.F != history.Acquire || a.Type != history.OK || b.Type != history.OK {
		return "", false
	}
	// a is the grant acknowledged first: of a token granted twice, the one
	// that returned first; of tokens going down, the higher one.
	switch {
	case a.Token == b.Token && b.Return < a.Return:
		a, b = b, a
	case a.Token < b.Token:
		a, b = b, a
	}
	// A crash between names the loss; with none, the service's own
	// failover does.
	cs := crashesBetween(faults, a.Return, b.Return)
	if len(cs) == 0 {
		cs = faultsBetween(faults, a.Return, b.Return, func(f string) bool { return f == FailoverEvent })
	}
	if len(cs) == 0 {
		return "", false
	}
	crash := fmt.Sprintf("the %s at %s", crashText(cs[0]), secs(cs[0].Start))
	one, many := "crash", "crashes"
	if cs[0].F == FailoverEvent {
		one, many = "failover", "failovers"
	}
	switch n := len(cs) - 1; {
	case n == 1:
		crash += fmt.Sprintf(" (or the %s after it)", one)
	case n > 1:
		crash += fmt.Sprintf(" (or one of the %d %s after it)", n, many)
	}
	s := fmt.Sprintf("token %d was acknowledged at %s (to process %d), %s lost it, and ", a.Token, secs(a.Return), a.Process, crash)
	if a.Token == b.Token {
		s += fmt.Sprintf("it was granted again at %s (to process %d)", secs(b.Return), b.Process)
	} else {
		s += fmt.Sprintf("the tokens went down to %d at %s (granted to process %d)", b.Token, secs(b.Return), b.Process)
	}
	return s + ": tokens must only increase", true
}
