// Package simulate makes up lock histories: a seeded simulation of lock
// clients in virtual time, with real lease semantics, for the checker's
// benchmarks and tests. It is test support: only bench and tests use it,
// and it must never be imported by the checker, the harness or anything a
// run depends on, nor judge a history itself (models does that).
//
// It lives under history, the format it writes and its one dependency,
// rather than in internal: internal's helpers stand beneath every other
// folder (history itself uses internal/jsonerr), so a helper there that
// imported history would tie the two folders in a loop.
package simulate

import (
	"container/heap"
	"math/rand/v2"
	"strconv"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Synthetic describes a history made up by a seeded simulation of lock
// clients in virtual time, for benchmarks and tests of the checker: real
// lease semantics (a FIFO lock per key, tokens that only increase, leases
// that expire), overlapping ops, unknown outcomes and holder pauses.
type Synthetic struct {
	Seed    uint64
	Ops     int // about this many ops (invoke + completion pairs)
	Keys    int
	Clients int
	// InfoRate is the chance an op's outcome is unknown; its effect is
	// drawn at random and the process retires.
	InfoRate float64
	// PauseRate is the chance a holder freezes after its read for longer
	// than the lease.
	PauseRate float64
	// Fenced: the storage refuses stale tokens (reads and writes). Without
	// it, pauses make the history invalid.
	Fenced bool
	// NoTokens records every op without its token, as a recipe without
	// tokens does (with PauseRate 0, so nothing is refused as fenced).
	NoTokens bool
}

type simEvent struct {
	at     int64
	client int
	seq    int64
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

type simLock struct {
	holder  int // client index, -1 when free
	token   uint64
	expires int64
	waiting []int
}

type simClient struct {
	process int
	step    int // 0 idle, 1 acquiring, 2 reading, 3 writing, 4 releasing
	key     int
	token   uint64
	read    int64
	pending *history.Event // the invoke in flight
	wake    int64          // when the waiting acquire was granted
}

// Generate runs the simulation and returns the history's ops.
func (s Synthetic) Generate() []history.Op {
	var events []history.Event
	s.Events(func(e history.Event) error { events = append(events, e); return nil })
	out, _ := history.Pair(events)
	return out
}

const (
	simMs  = int64(1e6)
	simTTL = 2000 * simMs
)

// sim is a simulation going on: the locks, the storage, the clients and
// the queue of what happens next.
type sim struct {
	s       Synthetic
	rng     *rand.Rand
	locks   []simLock
	values  []int64
	fences  []uint64
	clients []simClient
	q       simQueue
	seq     int64
	index   int64
	ops     int
	fn      func(history.Event) error
	err     error
}

// Events runs the simulation and hands each event to fn as it happens, in
// the history's order, so a history of any length can be written without
// holding it. It stops at fn's first error and returns it.
func (s Synthetic) Events(fn func(history.Event) error) error {
	m := &sim{s: s, fn: fn, rng: rand.New(rand.NewPCG(s.Seed, 0x5eed)),
		locks: make([]simLock, s.Keys), values: make([]int64, s.Keys), fences: make([]uint64, s.Keys),
		clients: make([]simClient, s.Clients)}
	for i := range m.locks {
		m.locks[i].holder = -1
	}
	for c := range m.clients {
		m.clients[c].process = c
		m.schedule(int64(m.rng.IntN(5))*simMs, c)
	}
	for m.q.Len() > 0 && m.ops < s.Ops && m.err == nil {
		ev := heap.Pop(&m.q).(simEvent)
		now := ev.at
		// Expired leases free their locks for the next waiter.
		for k := range m.locks {
			if l := &m.locks[k]; l.holder >= 0 && now > l.expires && len(l.waiting) > 0 {
				l.holder = -1
				m.grant(k, now)
			}
		}
		if ev.client < 0 {
			continue // a sweep only
		}
		if m.clients[ev.client].pending != nil {
			m.complete(ev.client, now)
		} else {
			m.invoke(ev.client, now)
		}
	}
	// Events were recorded in processing order, which is time order.
	return m.err
}

func (m *sim) schedule(at int64, c int) {
	m.seq++
	heap.Push(&m.q, simEvent{at: at, client: c, seq: m.seq})
}

func (m *sim) record(e history.Event) {
	if m.err != nil {
		return
	}
	e.Index = m.index
	m.index++
	if m.s.NoTokens {
		e.Token = 0
	}
	m.err = m.fn(e)
}

// lat is a message's latency.
func (m *sim) lat() int64 { return simMs/2 + m.rng.Int64N(2*simMs) }

// grant gives lock k to its first waiter.
func (m *sim) grant(k int, now int64) {
	l := &m.locks[k]
	for len(l.waiting) > 0 {
		c := l.waiting[0]
		l.waiting = l.waiting[1:]
		l.holder = c
		l.token++
		l.expires = now + simTTL
		m.clients[c].token = l.token
		m.schedule(now+m.lat(), c)
		// Wake the sweep when this lease runs out, in case its holder
		// never comes back (an unknown outcome retired it).
		m.schedule(l.expires+1, -1)
		return
	}
}

// complete ends client ci's op in flight and schedules its next step.
func (m *sim) complete(ci int, now int64) {
	s, rng := m.s, m.rng
	c := &m.clients[ci]
	inv := *c.pending
	done := inv
	done.Time = now
	done.Type = history.OK
	info := rng.Float64() < s.InfoRate
	k := c.key
	l := &m.locks[k]
	switch inv.F {
	case history.Acquire:
		done.Token = c.token
	case history.Read:
		if s.Fenced && c.token < m.fences[k] {
			done.Type, done.Error = history.Fail, lockclient.ErrorFenced
		} else {
			if s.Fenced {
				m.fences[k] = c.token
			}
			done.Value = history.Int64(m.values[k])
			c.read = m.values[k]
		}
	case history.Write:
		if s.Fenced && c.token < m.fences[k] {
			done.Type, done.Error = history.Fail, lockclient.ErrorFenced
		} else if !info || rng.IntN(2) == 0 {
			if s.Fenced {
				m.fences[k] = c.token
			}
			m.values[k] = *inv.Value
		}
	case history.Release:
		if l.holder == ci && l.token == c.token {
			l.holder = -1
			m.grant(k, now)
		} else {
			done.Type, done.Error = history.Fail, "not the holder"
		}
	}
	if info && inv.F != history.Acquire && done.Type == history.OK {
		done.Type, done.Value, done.Error = history.Info, nil, "timeout"
	}
	m.record(done)
	m.ops++
	c.pending = nil
	if done.Type == history.Info {
		c.process += s.Clients
		c.step = 0
		m.schedule(now+m.lat(), ci)
		return
	}
	switch {
	case inv.F == history.Acquire:
		c.step = 2
	case inv.F == history.Read && done.Type == history.OK:
		c.step = 3
		if rng.Float64() < s.PauseRate {
			m.schedule(now+simTTL+simTTL/2+rng.Int64N(simTTL), ci) // frozen past the lease
			return
		}
	case inv.F == history.Read, inv.F == history.Write:
		c.step = 4
	default:
		c.step = 0
	}
	m.schedule(now+rng.Int64N(simMs), ci)
}

// invoke starts client ci's next op.
func (m *sim) invoke(ci int, now int64) {
	c := &m.clients[ci]
	e := history.Event{Process: c.process, Type: history.Invoke, Time: now}
	switch c.step {
	case 0:
		c.key = m.rng.IntN(m.s.Keys)
		e.F, e.Key = history.Acquire, keyName(c.key)
		m.record(e)
		l := &m.locks[c.key]
		l.waiting = append(l.waiting, ci)
		c.step = 1
		if l.holder < 0 {
			m.grant(c.key, now)
		} else if now > l.expires {
			l.holder = -1
			m.grant(c.key, now)
		}
		ce := e
		c.pending = &ce
		return // its completion is scheduled when it is granted
	case 2:
		e.F, e.Key, e.Token = history.Read, keyName(c.key), c.token
	case 3:
		e.F, e.Key, e.Token, e.Prev, e.Value = history.Write, keyName(c.key), c.token, history.Int64(c.read), history.Int64(c.read+1)
	case 4:
		e.F, e.Key, e.Token = history.Release, keyName(c.key), c.token
	}
	m.record(e)
	ce := e
	c.pending = &ce
	m.schedule(now+m.lat(), ci)
}

func keyName(k int) string { return "k" + strconv.Itoa(k) }
