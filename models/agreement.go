package models

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
)

// A run ends, as Jepsen's and etcd's robustness tests end theirs, by
// asking the servers what they hold. Two questions, from what each lock
// service offers (its backend's answer) and the history:
//
//   - Do the members agree? Every member that answered must hold the same
//     state (etcd: HashKV of the keyspace at one revision; NATS: the
//     bucket's stream on each replica). Members that diverge can grant
//     one lock twice, whatever the history happened to show.
//   - Does the service still hold what it acknowledged? Each token
//     counter it keeps (etcd's revision, a NATS bucket's last sequence,
//     ZooKeeper's zxid, Redis's INCR, the lease table's counter) must be
//     at least the highest token it acknowledged on the keys it counts:
//     a counter below it went back, and the next grant hands out a token
//     already given. A counter that is gone (a lock bucket lost with its
//     stream) is the same loss. Either is a violation even when nothing
//     was granted after it: the history cannot show a grant that did not
//     happen yet, but the service has already lost what it promised.
//
// A member that did not answer is neither: the agreement is then decided
// on the members that did, and says which did not.

// ServiceState is what a backend's servers said at the end of a run
// (backends.ServiceState, as the harness hands it over).
type ServiceState struct {
	Query    string           `json:"query,omitempty"`
	Members  []MemberState    `json:"members"`
	Counters []ServiceCounter `json:"counters,omitempty"`
}

// MemberState is one member's answer: State is compared, Detail is read.
type MemberState struct {
	Node   string `json:"node"`
	State  string `json:"state,omitempty"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ServiceCounter is a token counter the service holds: of Key's tokens, or
// of every key's when Key is "". Gone says it no longer exists.
type ServiceCounter struct {
	Key   string `json:"key,omitempty"`
	What  string `json:"what"`
	Value uint64 `json:"value"`
	Gone  string `json:"gone,omitempty"`
	Node  string `json:"node,omitempty"`
}

// CounterCheck is a counter beside the highest token the service
// acknowledged on the keys it counts.
type CounterCheck struct {
	ServiceCounter
	// Acknowledged is the highest token of an ok acquire on the counted
	// keys (0 when none carried one); AckProcess, AckKey and AckTime (its
	// return, ns) say which grant.
	Acknowledged uint64 `json:"acknowledged"`
	AckProcess   int    `json:"ack_process"`
	AckKey       string `json:"ack_key,omitempty"`
	AckTime      int64  `json:"ack_time,omitempty"`
	// WentBack: the counter is gone, or below Acknowledged.
	WentBack bool `json:"went_back"`
}

// Agreement is the end-of-run comparison of the members and the counters.
type Agreement struct {
	Query    string         `json:"query,omitempty"`
	Members  []MemberState  `json:"members"`
	Counters []CounterCheck `json:"counters,omitempty"`
	// Diverged names the members whose state differs from the largest
	// group's (every answering member when no group is largest).
	Diverged []string `json:"diverged,omitempty"`
	// Silent names the members that did not answer.
	Silent []string `json:"silent,omitempty"`
	// Verdict is invalid when members diverged or a counter went back,
	// valid when the members that answered agree (at least two, or a
	// single server) and every counter holds, unknown when too few
	// answered to tell.
	Verdict     Verdict `json:"verdict"`
	Explanation string  `json:"explanation"`
}

// CheckAgreement compares the members' answers and holds each counter to
// the highest token the history shows the service acknowledged.
func CheckAgreement(st ServiceState, ops []history.Op) Agreement {
	a := Agreement{Query: st.Query, Members: st.Members}
	if a.Members == nil {
		a.Members = []MemberState{}
	}
	var problems []string

	for _, c := range st.Counters {
		cc := CounterCheck{ServiceCounter: c}
		for i := range ops {
			o := &ops[i]
			if o.F != history.Acquire || o.Type != history.OK || o.Token == 0 || (c.Key != "" && o.Key != c.Key) {
				continue
			}
			if o.Token > cc.Acknowledged || (o.Token == cc.Acknowledged && o.Return < cc.AckTime) {
				cc.Acknowledged, cc.AckProcess, cc.AckKey, cc.AckTime = o.Token, o.Process, o.Key, o.Return
			}
		}
		cc.WentBack = c.Gone != "" || c.Value < cc.Acknowledged
		if cc.WentBack {
			problems = append(problems, cc.text())
		}
		a.Counters = append(a.Counters, cc)
	}

	groups := map[string][]string{}
	var states []string
	for _, m := range st.Members {
		if m.Error != "" {
			a.Silent = append(a.Silent, m.Node)
			continue
		}
		if m.State == "" {
			continue // answered, with nothing to compare
		}
		if _, ok := groups[m.State]; !ok {
			states = append(states, m.State)
		}
		groups[m.State] = append(groups[m.State], m.Node)
	}
	if len(states) > 1 {
		// The largest group is taken to be the service's; the rest
		// diverged from it. With no largest group, every member is named.
		sort.SliceStable(states, func(i, j int) bool { return len(groups[states[i]]) > len(groups[states[j]]) })
		tie := len(groups[states[0]]) == len(groups[states[1]])
		var parts []string
		for i, s := range states {
			if i > 0 || tie {
				a.Diverged = append(a.Diverged, groups[s]...)
			}
			parts = append(parts, fmt.Sprintf("%s %s %s", words.List(groups[s]), holds(len(groups[s])), s))
		}
		sort.Strings(a.Diverged)
		problems = append([]string{fmt.Sprintf("the members diverged: %s", strings.Join(parts, "; "))}, problems...)
	}

	compared := len(a.comparedNames())
	switch {
	case len(problems) > 0:
		a.Verdict = Invalid
		a.Explanation = strings.Join(problems, "; and ")
	case compared == 0 && len(a.Counters) == 0:
		a.Verdict = Unknown
		a.Explanation = "no member answered with a state to compare, and no token counter was read"
	case compared == 1 && len(st.Members) > 1 && len(a.Counters) == 0:
		a.Verdict = Unknown
		a.Explanation = fmt.Sprintf("only %s answered: nothing to compare it with", a.comparedNames()[0])
	default:
		a.Verdict = Valid
		a.Explanation = a.agreeText()
	}
	if len(a.Silent) > 0 && a.Verdict != Unknown {
		a.Explanation += fmt.Sprintf(" (%s did not answer)", words.List(a.Silent))
	}
	return a
}

// comparedNames are the members that answered with a state to compare.
func (a Agreement) comparedNames() []string {
	var out []string
	for _, m := range a.Members {
		if m.Error == "" && m.State != "" {
			out = append(out, m.Node)
		}
	}
	return out
}

// agreeText is what a valid agreement says: "n1, n2 and n3 hold the same
// state; the store's revision 812 is at least token 812, the highest
// acknowledged".
func (a Agreement) agreeText() string {
	var parts []string
	names := a.comparedNames()
	var state string
	for _, m := range a.Members {
		if m.Error == "" && m.State != "" {
			state = m.State
			break
		}
	}
	switch {
	case len(names) > 1:
		parts = append(parts, fmt.Sprintf("%s hold the same state (%s)", words.List(names), state))
	case len(names) == 1:
		parts = append(parts, fmt.Sprintf("%s holds %s", names[0], state))
	}
	for _, c := range a.Counters {
		if c.Acknowledged == 0 {
			parts = append(parts, fmt.Sprintf("%s is %d (no token acknowledged to hold it to)", c.What, c.Value))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s is %d, at least token %d, the highest acknowledged", c.What, c.Value, c.Acknowledged))
	}
	return strings.Join(parts, "; ")
}

// text says how a counter went back: "the store's revision is 35 on n1,
// below token 448, acknowledged at 12.30 s (to process 2 on key k3)".
func (c CounterCheck) text() string {
	on := ""
	if c.Node != "" {
		on = " on " + c.Node
	}
	if c.Gone != "" {
		s := fmt.Sprintf("the service lost its token counter: %s%s is gone (%s)", c.What, on, c.Gone)
		if c.Acknowledged > 0 {
			s += fmt.Sprintf(", though it had acknowledged token %d at %s (to process %d on key %s)", c.Acknowledged, secs(c.AckTime), c.AckProcess, c.AckKey)
		}
		return s
	}
	return fmt.Sprintf("the service's token counter went back: %s is %d%s, below token %d, acknowledged at %s (to process %d on key %s)",
		c.What, c.Value, on, c.Acknowledged, secs(c.AckTime), c.AckProcess, c.AckKey)
}

// Short is the agreement as a summary line says it.
func (a Agreement) Short() string {
	switch a.Verdict {
	case Valid:
		return "agree: " + a.Explanation
	case Invalid:
		return "VIOLATED: " + a.Explanation
	}
	return "not decided: " + a.Explanation
}

func holds(n int) string {
	if n == 1 {
		return "holds"
	}
	return "hold"
}

// State is what the servers said, as a stored agreement keeps it: what
// CheckAgreement holds a history to again (`check report`).
func (a Agreement) State() ServiceState {
	st := ServiceState{Query: a.Query, Members: a.Members}
	for _, c := range a.Counters {
		st.Counters = append(st.Counters, c.ServiceCounter)
	}
	return st
}

// Recheck holds ops to what a stored agreement says the servers held; nil
// when they were not asked.
func (a *Agreement) Recheck(ops []history.Op) *Agreement {
	if a == nil {
		return nil
	}
	b := CheckAgreement(a.State(), ops)
	return &b
}
