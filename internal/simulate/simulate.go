// Package simulate makes up lock histories: a seeded simulation of lock
// clients in virtual time, with real lease semantics, for the checker's
// benchmarks and tests. It is test support: only bench and tests use it,
// and it must never be imported by the checker, the harness or anything a
// run depends on, nor judge a history itself (models does that).
package simulate

import (
	"container/heap"
	"math/rand/v2"
	"strconv"

	"github.com/fencecheck/fencecheck/history"
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

// Events runs the simulation and hands each event to fn as it happens, in
// the history's order, so a history of any length can be written without
// holding it. It stops at fn's first error and returns it.
func (s Synthetic) Events(fn func(history.Event) error) error {
	const (
		ms  = int64(1e6)
		ttl = 2000 * ms
	)
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	locks := make([]simLock, s.Keys)
	values := make([]int64, s.Keys)
	fences := make([]uint64, s.Keys)
	for i := range locks {
		locks[i].holder = -1
	}
	clients := make([]simClient, s.Clients)
	var q simQueue
	var seq int64
	schedule := func(at int64, c int) {
		seq++
		heap.Push(&q, simEvent{at: at, client: c, seq: seq})
	}
	for c := range clients {
		clients[c].process = c
		schedule(int64(rng.IntN(5))*ms, c)
	}
	var index int64
	var err error
	record := func(e history.Event) {
		if err != nil {
			return
		}
		e.Index = index
		index++
		if s.NoTokens {
			e.Token = 0
		}
		err = fn(e)
	}
	lat := func() int64 { return ms/2 + rng.Int64N(2*ms) }
	grant := func(k int, now int64) {
		l := &locks[k]
		for len(l.waiting) > 0 {
			c := l.waiting[0]
			l.waiting = l.waiting[1:]
			l.holder = c
			l.token++
			l.expires = now + ttl
			clients[c].token = l.token
			schedule(now+lat(), c)
			// Wake the sweep when this lease runs out, in case its holder
			// never comes back (an unknown outcome retired it).
			schedule(l.expires+1, -1)
			return
		}
	}
	ops := 0
	for q.Len() > 0 && ops < s.Ops && err == nil {
		ev := heap.Pop(&q).(simEvent)
		now := ev.at
		// Expired leases free their locks for the next waiter.
		for k := range locks {
			if l := &locks[k]; l.holder >= 0 && now > l.expires && len(l.waiting) > 0 {
				l.holder = -1
				grant(k, now)
			}
		}
		if ev.client < 0 {
			continue // a sweep only
		}
		c := &clients[ev.client]
		if c.pending != nil {
			// Complete the op in flight.
			inv := *c.pending
			done := inv
			done.Time = now
			done.Type = history.OK
			info := rng.Float64() < s.InfoRate
			k := c.key
			l := &locks[k]
			switch inv.F {
			case history.Acquire:
				done.Token = c.token
			case history.Read:
				if s.Fenced && c.token < fences[k] {
					done.Type, done.Error = history.Fail, history.ErrFenced
				} else {
					if s.Fenced {
						fences[k] = c.token
					}
					done.Value = history.Int64(values[k])
					c.read = values[k]
				}
			case history.Write:
				if s.Fenced && c.token < fences[k] {
					done.Type, done.Error = history.Fail, history.ErrFenced
				} else if !info || rng.IntN(2) == 0 {
					if s.Fenced {
						fences[k] = c.token
					}
					values[k] = *inv.Value
				}
			case history.Release:
				if l.holder == ev.client && l.token == c.token {
					l.holder = -1
					grant(k, now)
				} else {
					done.Type, done.Error = history.Fail, "not the holder"
				}
			}
			if info && inv.F != history.Acquire && done.Type == history.OK {
				done.Type, done.Value, done.Error = history.Info, nil, "timeout"
			}
			record(done)
			ops++
			c.pending = nil
			if done.Type == history.Info {
				c.process += s.Clients
				c.step = 0
				schedule(now+lat(), ev.client)
				continue
			}
			switch {
			case inv.F == history.Acquire:
				c.step = 2
			case inv.F == history.Read && done.Type == history.OK:
				c.step = 3
				if rng.Float64() < s.PauseRate {
					schedule(now+ttl+ttl/2+rng.Int64N(ttl), ev.client) // frozen past the lease
					continue
				}
			case inv.F == history.Read, inv.F == history.Write:
				c.step = 4
			default:
				c.step = 0
			}
			schedule(now+rng.Int64N(ms), ev.client)
			continue
		}
		// Invoke the next op.
		e := history.Event{Process: c.process, Type: history.Invoke, Time: now}
		switch c.step {
		case 0:
			c.key = rng.IntN(s.Keys)
			e.F, e.Key = history.Acquire, keyName(c.key)
			record(e)
			l := &locks[c.key]
			l.waiting = append(l.waiting, ev.client)
			c.step = 1
			if l.holder < 0 {
				grant(c.key, now)
			} else if now > l.expires {
				l.holder = -1
				grant(c.key, now)
			}
			ce := e
			c.pending = &ce
			continue // its completion is scheduled when it is granted
		case 2:
			e.F, e.Key, e.Token = history.Read, keyName(c.key), c.token
		case 3:
			e.F, e.Key, e.Token, e.Prev, e.Value = history.Write, keyName(c.key), c.token, history.Int64(c.read), history.Int64(c.read+1)
		case 4:
			e.F, e.Key, e.Token = history.Release, keyName(c.key), c.token
		}
		record(e)
		ce := e
		c.pending = &ce
		schedule(now+lat(), ev.client)
	}
	// Events were recorded in processing order, which is time order.
	return err
}

func keyName(k int) string { return "k" + strconv.Itoa(k) }
