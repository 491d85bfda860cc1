package models

// This file is the exposure counter: one pass over a history's events,
// following each key's terms (see the definitions at the top of
// exposure.go), holding only the open terms and the ops in flight so that
// a streamed history of any length is counted in bounded memory. What the
// counts mean and how they are worded stay in exposure.go.

import (
	"sort"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// rank orders terms: by token, then by grant order.
type rank struct {
	token uint64
	seq   int64
}

func (a rank) newer(b rank) bool {
	return a.token > b.token || (a.token == b.token && a.seq > b.seq)
}

type term struct {
	process    int
	key        string
	rank       rank
	superseded bool
	worst      ExposureOutcome
	harmless   bool
	decider    Exposure
	// wentBack: its token is below one the service had already granted
	// on the key (a grant that went down); refusedBack: the storage
	// refused an op of it while no newer grant had superseded it.
	wentBack, refusedBack bool
}

type keyExposure struct {
	counts   ExposureCounts
	open     map[int]*term // process → its open term on this key
	seq      int64
	admitted rank // the newest term an ok read or write came from
	anyOK    bool
	// granted is the highest token of a grant completed so far.
	granted uint64
}

type pendingOp struct {
	f     string
	key   string
	index int64
	// granted is the key's highest token granted when an acquire was
	// invoked.
	granted uint64
}

// ExposureCounter counts exposures one event at a time, so that a
// history read as a stream is counted without keeping it: it holds only
// the open terms and the ops in flight. Feed it every event of a history
// in order, then call Result.
type ExposureCounter struct {
	keys    map[string]*keyExposure
	pending map[int]pendingOp
	list    []Exposure
}

// NewExposureCounter starts an empty count.
func NewExposureCounter() *ExposureCounter {
	return &ExposureCounter{keys: map[string]*keyExposure{}, pending: map[int]pendingOp{}}
}

func (c *ExposureCounter) key(k string) *keyExposure {
	ke := c.keys[k]
	if ke == nil {
		ke = &keyExposure{open: map[int]*term{}}
		c.keys[k] = ke
	}
	return ke
}

// Add takes the next event of a history.
func (c *ExposureCounter) Add(e history.Event) {
	if e.IsNemesis() || e.Type == history.End {
		return
	}
	if e.Type == history.Invoke {
		c.pending[e.Process] = pendingOp{f: e.F, key: e.Key, index: e.Index, granted: c.key(e.Key).granted}
		if e.F == history.Release {
			c.close(c.key(e.Key), e.Process)
		}
		return
	}
	op, ok := c.pending[e.Process]
	if !ok {
		return
	}
	delete(c.pending, e.Process)
	ke := c.key(op.key)
	switch op.f {
	case history.Acquire:
		if e.Type == history.OK {
			c.grant(ke, op.key, e, op.granted)
		}
	case history.Read, history.Write:
		c.storageOp(ke, op, e)
	}
}

// grant opens a term and supersedes every open term it is newer than; a
// grant older than an open term (a lower token handed out later: a grant
// on an expired lease) is superseded from its start.
//
// A grant whose token is below one already granted on the key before it
// was asked for (granted: a token that went down, as the contradicted
// grants count it) is marked: the storage refuses its ops because the
// service's tokens went back, not because a newer holder superseded it.
func (c *ExposureCounter) grant(ke *keyExposure, key string, e history.Event, granted uint64) {
	c.close(ke, e.Process)
	ke.seq++
	t := &term{process: e.Process, key: key, rank: rank{e.Token, ke.seq}, wentBack: e.Token < granted}
	ke.granted = max(ke.granted, e.Token)
	for _, u := range ke.open {
		switch {
		case t.rank.newer(u.rank):
			u.superseded = true
		default:
			t.superseded = true
		}
	}
	ke.open[e.Process] = t
}

func (c *ExposureCounter) storageOp(ke *keyExposure, op pendingOp, e history.Event) {
	t := ke.open[e.Process]
	if t == nil {
		return // not under a lease (a final read has its own acquire)
	}
	fenced := e.Type == history.Fail && (e.Error == lockclient.ErrorFenced || e.Error == history.ErrGuardFailed)
	lost := e.Type == history.Fail && e.Error == lockclient.ErrorLeaseLost
	if fenced && t.wentBack && !t.superseded {
		// No newer holder: the storage refused a token the service handed
		// out below one it had already granted. Counted apart, with the
		// contradicted grants, not as an exposure.
		t.refusedBack = true
		return
	}
	if t.superseded || fenced || lost {
		var out ExposureOutcome
		switch {
		case fenced:
			out = ExposureRefused
		case e.Type == history.Fail && e.Error == lockclient.ErrorLeaseLost:
			out = ExposureNotSent
		case e.Type == history.Info:
			out = ExposureUnknown
		case e.Type == history.OK && op.f == history.Write && ke.anyOK && ke.admitted.newer(t.rank):
			out = ExposureAdmitted
		default:
			t.harmless = true
		}
		if severity(out) > severity(t.worst) {
			t.worst = out
			t.decider = Exposure{Key: op.key, Process: e.Process, Token: t.rank.token, Outcome: out, Op: op.index, Time: e.Time}
		}
	}
	if e.Type == history.OK && (!ke.anyOK || t.rank.newer(ke.admitted)) {
		ke.admitted, ke.anyOK = t.rank, true
	}
	if e.Type == history.Info || (e.Type == history.Fail && e.Error == lockclient.ErrorLeaseLost) {
		c.close(ke, e.Process)
	}
}

// close ends process p's open term on the key, counting it.
func (c *ExposureCounter) close(ke *keyExposure, p int) {
	t := ke.open[p]
	if t == nil {
		return
	}
	delete(ke.open, p)
	cs := &ke.counts
	switch t.worst {
	case ExposureAdmitted:
		cs.Admitted++
	case ExposureRefused:
		cs.Refused++
	case ExposureNotSent:
		cs.NotSent++
	case ExposureUnknown:
		cs.Unknown++
	default:
		switch {
		case t.refusedBack:
			cs.RefusedWentBack++
		case t.harmless:
			cs.Harmless++
		case t.superseded:
			cs.OutlivedIdle++
		}
		return
	}
	cs.Exposures++
	if len(c.list) < MaxListedExposures {
		c.list = append(c.list, t.decider)
	}
}

// Counted is the exposures counted so far: those of the terms already
// closed (a term is counted when its holder releases, learns its lease is
// gone, or ends an op in doubt).
func (c *ExposureCounter) Counted() int {
	n := 0
	for _, ke := range c.keys {
		n += ke.counts.Exposures
	}
	return n
}

// Result closes the terms still open (the history ended in them) and
// returns the counts, per key in name order.
func (c *ExposureCounter) Result() Exposures {
	names := make([]string, 0, len(c.keys))
	for k := range c.keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var x Exposures
	x.Keys = []KeyExposures{}
	for _, k := range names {
		ke := c.keys[k]
		ps := make([]int, 0, len(ke.open))
		for p := range ke.open {
			ps = append(ps, p)
		}
		sort.Ints(ps)
		for _, p := range ps {
			c.close(ke, p)
		}
		x.Keys = append(x.Keys, KeyExposures{Key: k, ExposureCounts: ke.counts})
		x.Add(ke.counts)
	}
	x.List = append([]Exposure(nil), c.list...)
	return x
}

// CountExposures counts the exposures of a whole history's events.
func CountExposures(events []history.Event) Exposures {
	c := NewExposureCounter()
	for _, e := range events {
		c.Add(e)
	}
	return c.Result()
}
