package reports

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// synthetic builds a valid history of about n client ops: five slots take
// turns through lock → read → write → release on one key, the next
// holder's acquire waiting in the queue; every so often the nemesis
// freezes a holder between its read and its write for longer than its
// lease, and it writes when it wakes — admitted (fenced false, a lost
// update) or refused as fenced; now and then a write times out (info) and
// the slot continues as a new process. The result names the first stale
// write as the culprit, as the checker would.
func synthetic(t testing.TB, n int, fenced bool) *Run {
	t.Helper()
	const slots = 5
	var events []history.Event
	at := func(ns int64, e history.Event) { e.Time = ns; events = append(events, e) }
	proc := make([]int, slots)
	for i := range proc {
		proc[i] = i
	}
	var (
		now     int64 = 1e6
		token   uint64
		value   int64
		ops     int
		section int
		culprit [2]int // positions in events of the first stale write's invoke and the op it conflicts with
		found   bool
	)
	culprit = [2]int{-1, -1}
	type frozen struct {
		p        int
		tok      uint64
		read     int64
		resumeAt int64
	}
	pending := map[int]frozen{}
	lastAdmitted := -1
	for ops < n {
		s := section % slots
		section++
		p := proc[s]
		// A frozen holder wakes and writes with its stale token.
		if st, ok := pending[s]; ok {
			if now < st.resumeAt {
				continue
			}
			delete(pending, s)
			inv := len(events)
			at(now, history.Event{Process: st.p, Type: history.Invoke, F: history.Write, Key: "k0", Token: st.tok, Prev: history.Int64(st.read), Value: history.Int64(st.read + 1)})
			done := history.Event{Process: st.p, Type: history.OK, F: history.Write, Key: "k0", Token: st.tok, Prev: history.Int64(st.read), Value: history.Int64(st.read + 1)}
			if fenced {
				done.Type, done.Error = history.Fail, lockclient.ErrorFenced
			} else {
				value = st.read + 1
				if !found {
					culprit, found = [2]int{inv, lastAdmitted}, true
				}
			}
			at(now+400e3, done)
			at(now+500e3, history.Event{Process: st.p, Type: history.Invoke, F: history.Release, Key: "k0", Token: st.tok})
			at(now+800e3, history.Event{Process: st.p, Type: history.Fail, F: history.Release, Key: "k0", Token: st.tok, Error: "not the holder: the lease expired or was taken over"})
			now += 1e6
			ops += 2
			continue
		}
		// The next holder asks while this one works: queued acquires.
		at(now, history.Event{Process: p, Type: history.Invoke, F: history.Acquire, Key: "k0"})
		now += 300e3
		token++
		tok := token
		at(now, history.Event{Process: p, Type: history.OK, F: history.Acquire, Key: "k0", Token: tok})
		at(now+50e3, history.Event{Process: p, Type: history.Invoke, F: history.Read, Key: "k0", Token: tok})
		lastAdmitted = len(events) - 1
		at(now+300e3, history.Event{Process: p, Type: history.OK, F: history.Read, Key: "k0", Token: tok, Value: history.Int64(value)})
		read := value
		ops += 2
		if section%997 == 0 {
			// Freeze this holder for ten sections.
			at(now+350e3, history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: "pause", Nodes: []string{fmt.Sprintf("c%d", s+1)}})
			pending[s] = frozen{p, tok, read, now + 30e6}
			at(now+30e6-1, history.Event{Process: history.NemesisProcess, Type: history.Info, F: "pause", Nodes: []string{fmt.Sprintf("c%d", s+1)}})
			now += 1e6
			continue
		}
		at(now+400e3, history.Event{Process: p, Type: history.Invoke, F: history.Write, Key: "k0", Token: tok, Prev: history.Int64(read), Value: history.Int64(read + 1)})
		if section%3001 == 0 {
			// The write times out: unknown outcome, the slot gets a new process.
			at(now+900e3, history.Event{Process: p, Type: history.Info, F: history.Write, Key: "k0", Token: tok, Prev: history.Int64(read), Value: history.Int64(read + 1), Error: "timeout"})
			proc[s] += slots
			now += 1e6
			ops++
			continue
		}
		value = read + 1
		at(now+700e3, history.Event{Process: p, Type: history.OK, F: history.Write, Key: "k0", Token: tok, Prev: history.Int64(read), Value: history.Int64(read + 1)})
		at(now+800e3, history.Event{Process: p, Type: history.Invoke, F: history.Release, Key: "k0", Token: tok})
		at(now+1000e3, history.Event{Process: p, Type: history.OK, F: history.Release, Key: "k0", Token: tok})
		now += 1100e3
		ops += 2
	}
	// The final read, by a process past all others, after every write.
	now += 50e6
	final := 10 * n
	token++
	at(now, history.Event{Process: final, Type: history.Invoke, F: history.Acquire, Key: "k0"})
	at(now+300e3, history.Event{Process: final, Type: history.OK, F: history.Acquire, Key: "k0", Token: token})
	at(now+400e3, history.Event{Process: final, Type: history.Invoke, F: history.Read, Key: "k0", Token: token})
	at(now+600e3, history.Event{Process: final, Type: history.OK, F: history.Read, Key: "k0", Token: token, Value: history.Int64(value)})
	now += 1e6
	// Real-time order, then indexes.
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return events[order[a]].Time < events[order[b]].Time })
	pos := make([]int, len(events))
	sorted := make([]history.Event, len(events))
	for i, j := range order {
		sorted[i] = events[j]
		sorted[i].Index = int64(i)
		pos[j] = i
	}
	v := history.NewValidator()
	for _, e := range sorted {
		if err := v.Check(e); err != nil {
			t.Fatalf("synthetic history: %v (%+v)", err, e)
		}
	}
	hops, faults := history.Pair(sorted)
	r := &Run{
		Name: "synthetic", Command: "check --backend memory --fencing none --nemesis pause --seed 1",
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: time.Duration(now), CheckTime: time.Second,
		Params: []Param{{"backend", "memory"}, {"clients", fmt.Sprint(slots)}, {"seed", "1"}},
		Events: sorted, Ops: hops, Faults: faults,
	}
	k := models.KeyResult{Key: "k0", Verdict: models.Valid, Ops: len(hops)}
	if found {
		k.Verdict = models.Invalid
		k.Explanation = "a stale lease holder's write was accepted"
		k.Culprits = []int64{int64(pos[culprit[0]]), int64(pos[culprit[1]])}
	}
	r.Result = models.Result{Verdict: k.Verdict, Explanation: k.Explanation, Keys: []models.KeyResult{k}}
	return r
}
