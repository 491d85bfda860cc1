package reports

import (
	"fmt"
	"sort"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// Step is one line of an anomaly's story.
type Step struct {
	Time int64  `json:"time"`
	Text string `json:"text"`
	// Kind says what the step is, for its colour: op (an ordinary op),
	// holder (an op of the process that ends up stale), stale (one of its
	// ops that carried an already superseded token), takeover (the first
	// grant of a newer token), fault, meanwhile (a summary of ops left
	// out), culprit (the op that cannot be linearized), lost (what it
	// overwrote), after (what the next read saw).
	Kind string `json:"kind"`
	// Index is the history index of the op's invocation; -1 for faults
	// and summaries.
	Index int64 `json:"index"`
}

// maxInterleaved bounds the other processes' ops told one by one between
// the stale holder's last op and the culprit.
const maxInterleaved = 5

// Story tells an invalid key's anomaly from the history itself, step by
// step: who held which token, when the fault hit, who took
// over, which stale op was admitted and what it overwrote. It covers the
// window from the stale holder's acquire to the culprit's completion; the
// ops in that window that are not part of the story are summed up in
// "meanwhile" steps so the story stays a page long on any history.
func Story(r *Run, k *models.KeyResult) []Step {
	if k.Verdict != models.Invalid || len(k.Culprits) == 0 {
		return nil
	}
	t := newTeller(r, k.Key)
	c := t.byInvoke[k.Culprits[0]]
	if c == nil {
		return nil
	}
	st := &story{t: t, c: c}
	if len(k.Culprits) > 1 {
		st.blamed = t.byInvoke[k.Culprits[1]]
	}
	st.window()
	st.name()
	steps := st.tell(st.items())
	if c.F == history.Write && c.Type == history.OK {
		if s, ok := t.lostStep(c, st.over); ok {
			steps = append(steps, s)
		}
		if s, ok := t.tally(); ok {
			steps = append(steps, s)
		}
	}
	return steps
}

// story is one anomaly being told: the culprit, the ops that explain it
// and the window of time the story covers.
type story struct {
	t *teller
	c *history.Op // the culprit
	// blamed is the op the culprit conflicts with, when the check named
	// one; acq the stale holder's acquire; takeover the first grant of a
	// newer token; over the last write acknowledged before a culprit
	// write. Each may be nil.
	blamed, acq, takeover, over *history.Op
	// start and end bound the window told.
	start, end int64
	// named are the ops told one by one, with their kind.
	named map[*history.Op]string
}

// window finds the stale holder's acquire (its last ok acquire on the key
// before the culprit) and the window from it to the culprit's end.
func (st *story) window() {
	c := st.c
	if c.F != history.Acquire {
		for _, o := range st.t.ops {
			if o.Process == c.Process && o.F == history.Acquire && o.Type == history.OK && o.Call <= c.Call {
				st.acq = o
			}
		}
	}
	st.start, st.end = c.Call, c.Ended()
	if st.acq != nil {
		st.start = st.acq.Call
	}
	if st.blamed != nil {
		st.start = min(st.start, st.blamed.Call)
	}
}

// name picks the ops told one by one: the culprit, the holder's own ops,
// the takeover, the write the culprit overwrote and the last few ops of
// others between the holder's last op and the culprit.
func (st *story) name() {
	c, t := st.c, st.t
	named := map[*history.Op]string{c: "culprit"}
	st.named = named
	if st.blamed != nil {
		named[st.blamed] = "op"
	}
	var lastHolder *history.Op // the holder's op just before the culprit
	for _, o := range t.ops {
		if o.Process == c.Process && o != c && o.Call >= st.start && o.Call <= st.end {
			named[o] = "holder"
			lastHolder = o
		}
	}
	if acq := st.acq; acq != nil {
		var takeover *history.Op
		for _, o := range t.ops {
			if o.Process != c.Process && o.F == history.Acquire && o.Type == history.OK && o.Token > acq.Token &&
				o.Ended() >= acq.Call && (takeover == nil || o.Ended() < takeover.Ended()) {
				takeover = o
			}
		}
		if takeover != nil && takeover.Ended() <= st.end {
			named[takeover] = "takeover"
			st.start = min(st.start, takeover.Call)
			st.takeover = takeover
		}
	}
	if c.F == history.Write && c.Type == history.OK {
		var over *history.Op
		for _, o := range t.ops {
			if o.Process != c.Process && o.F == history.Write && o.Type == history.OK && o.Done > 0 && o.Ended() < c.Ended() &&
				(over == nil || o.Ended() > over.Ended()) {
				over = o
			}
		}
		if over != nil && over.Ended() >= st.start {
			named[over] = "op"
		}
		st.over = over
	}
	if lastHolder != nil {
		var between []*history.Op
		for _, o := range t.ops {
			if o.Process != c.Process && o.F != history.Release && o.Ended() > lastHolder.Ended() && o.Ended() < c.Ended() {
				between = append(between, o)
			}
		}
		sort.SliceStable(between, func(i, j int) bool { return between[i].Ended() < between[j].Ended() })
		if len(between) > maxInterleaved {
			between = between[len(between)-maxInterleaved:]
		}
		for _, o := range between {
			if named[o] == "" {
				named[o] = "op"
			}
		}
	}
}

// storyItem is one moment of the window: an op's end or a step already
// told (a fault, a slow op of the holder's beginning).
type storyItem struct {
	at    int64
	op    *history.Op
	fault *Step
}

// items are the window's moments in time order.
func (st *story) items() []storyItem {
	c, t := st.c, st.t
	var items []storyItem
	for _, o := range t.ops {
		if o.Ended() < st.start || o.Call > st.end {
			continue
		}
		if st.named[o] == "" && o.Type != history.OK && o.Error != lockclient.ErrorFenced {
			// Failed releases and the like only clutter the story.
			continue
		}
		if st.named[o] == "" && o.Ended() > st.end {
			continue // the story ends with the culprit
		}
		if o.Process == c.Process && t.slow(o) {
			var text string
			switch o.F {
			case history.Acquire:
				text = fmt.Sprintf("%s asked for the lease on %s", t.who(o.Process), t.key)
			case history.Write:
				text = fmt.Sprintf("%s began its write of %s over %s with token %d", t.who(o.Process), i64(o.Value), i64(o.Prev), o.Token)
			default:
				text = fmt.Sprintf("%s began its %s with token %d", t.who(o.Process), o.F, o.Token)
			}
			s := Step{o.Call, text, "holder", o.InvokeIndex}
			items = append(items, storyItem{at: o.Call, fault: &s})
		}
		items = append(items, storyItem{at: o.Ended(), op: o})
	}
	for _, s := range t.faultSteps(st.start, st.end, c.Process) {
		items = append(items, storyItem{at: s.Time, fault: &s})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at < items[j].at })
	return items
}

// tell walks the window in time order: the named ops one by one, the
// others summed up.
func (st *story) tell(items []storyItem) []Step {
	t := st.t
	var steps []Step
	var skipped []*history.Op
	flush := func() {
		steps = append(steps, t.summed(skipped)...)
		skipped = nil
	}
	for _, it := range items {
		if it.fault != nil {
			flush()
			steps = append(steps, *it.fault)
			continue
		}
		o := it.op
		role := st.named[o]
		if role == "" {
			skipped = append(skipped, o)
			continue
		}
		flush()
		switch {
		case o == st.c:
			steps = append(steps, t.culpritStep(st.c, st.blamed))
		case o == st.takeover:
			steps = append(steps, Step{o.Ended(), fmt.Sprintf("%s took the lease on %s over with token %d: from here on, token %d is stale",
				t.who(o.Process), t.key, o.Token, st.acq.Token), "takeover", o.InvokeIndex})
		default:
			steps = append(steps, t.opStep(o, role))
		}
	}
	flush()
	return steps
}

// summed tells ops left out of the story: nothing for releases alone, one
// by one for one or two, else a "meanwhile" step.
func (t *teller) summed(skipped []*history.Op) []Step {
	releases := 0
	for _, o := range skipped {
		if o.F == history.Release {
			releases++
		}
	}
	if releases == len(skipped) {
		return nil // releases alone add nothing to the story
	}
	if len(skipped) <= 2 {
		var steps []Step
		for _, o := range skipped {
			if o.F != history.Release {
				steps = append(steps, t.opStep(o, "op"))
			}
		}
		return steps
	}
	s := t.meanwhile(skipped)
	s.Time = skipped[0].Ended()
	return []Step{s}
}
