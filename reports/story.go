package reports

import (
	"fmt"
	"sort"

	"github.com/fencecheck/fencecheck/history"
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
	var blamed *history.Op
	if len(k.Culprits) > 1 {
		blamed = t.byInvoke[k.Culprits[1]]
	}
	// The stale holder's acquire: its last ok acquire on the key before
	// the culprit.
	var acq *history.Op
	if c.F != history.Acquire {
		for _, o := range t.ops {
			if o.Process == c.Process && o.F == history.Acquire && o.Type == history.OK && o.Call <= c.Call {
				acq = o
			}
		}
	}
	start, end := c.Call, c.Ended()
	if acq != nil {
		start = acq.Call
	}
	if blamed != nil {
		start = min(start, blamed.Call)
	}

	// The ops told one by one.
	named := map[*history.Op]string{c: "culprit"}
	if blamed != nil {
		named[blamed] = "op"
	}
	var lastHolder *history.Op // the holder's op just before the culprit
	for _, o := range t.ops {
		if o.Process == c.Process && o != c && o.Call >= start && o.Call <= end {
			named[o] = "holder"
			lastHolder = o
		}
	}
	var takeover *history.Op
	if acq != nil {
		for _, o := range t.ops {
			if o.Process != c.Process && o.F == history.Acquire && o.Type == history.OK && o.Token > acq.Token &&
				o.Ended() >= acq.Call && (takeover == nil || o.Ended() < takeover.Ended()) {
				takeover = o
			}
		}
		if takeover != nil && takeover.Ended() <= end {
			named[takeover] = "takeover"
			start = min(start, takeover.Call)
		} else {
			takeover = nil
		}
	}
	var over *history.Op // the last write acknowledged before a culprit write
	if c.F == history.Write && c.Type == history.OK {
		for _, o := range t.ops {
			if o.Process != c.Process && o.F == history.Write && o.Type == history.OK && o.Done > 0 && o.Ended() < c.Ended() &&
				(over == nil || o.Ended() > over.Ended()) {
				over = o
			}
		}
		if over != nil && over.Ended() >= start {
			named[over] = "op"
		}
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

	// Walk the window in time order; ops not named are summed up.
	type item struct {
		at    int64
		op    *history.Op
		fault *Step
	}
	var items []item
	for _, o := range t.ops {
		if o.Ended() < start || o.Call > end {
			continue
		}
		if named[o] == "" && o.Type != history.OK && o.Error != history.ErrFenced {
			// Failed releases and the like only clutter the story.
			continue
		}
		if named[o] == "" && o.Ended() > end {
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
			items = append(items, item{at: o.Call, fault: &s})
		}
		items = append(items, item{at: o.Ended(), op: o})
	}
	for _, s := range t.faultSteps(start, end, c.Process) {
		items = append(items, item{at: s.Time, fault: &s})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at < items[j].at })

	var steps []Step
	var skipped []*history.Op
	flush := func() {
		releases := 0
		for _, o := range skipped {
			if o.F == history.Release {
				releases++
			}
		}
		if releases == len(skipped) {
			skipped = nil // releases alone add nothing to the story
		}
		if len(skipped) > 0 && len(skipped) <= 2 {
			for _, o := range skipped {
				if o.F != history.Release {
					steps = append(steps, t.opStep(o, "op"))
				}
			}
			skipped = nil
		}
		if len(skipped) > 0 {
			s := t.meanwhile(skipped)
			s.Time = skipped[0].Ended()
			steps = append(steps, s)
			skipped = nil
		}
	}
	for _, it := range items {
		if it.fault != nil {
			flush()
			steps = append(steps, *it.fault)
			continue
		}
		o := it.op
		role := named[o]
		if role == "" {
			skipped = append(skipped, o)
			continue
		}
		flush()
		switch {
		case o == c:
			steps = append(steps, t.culpritStep(c, blamed))
		case o == takeover:
			steps = append(steps, Step{o.Ended(), fmt.Sprintf("%s took the lease on %s over with token %d: from here on, token %d is stale",
				t.who(o.Process), t.key, o.Token, acq.Token), "takeover", o.InvokeIndex})
		default:
			steps = append(steps, t.opStep(o, role))
		}
	}
	flush()
	if c.F == history.Write && c.Type == history.OK {
		if s, ok := t.lostStep(c, over); ok {
			steps = append(steps, s)
		}
		if s, ok := t.tally(); ok {
			steps = append(steps, s)
		}
	}
	return steps
}
