package models

import (
	"sort"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Belief is an interval in which a process believed it held a key's lease:
// from the completion of its ok acquire to the invocation of its release,
// or to the completion of the op that told it the lease was gone
// (lease-lost), of an op whose outcome is unknown (the process is retired
// there), or to the end of the history.
type Belief struct {
	Process    int
	Key        string
	Token      uint64
	Start, End int64
	// Acquire is the history index of the acquire's invocation.
	Acquire int64
}

// Holder is one side of an overlap.
type Holder struct {
	Process int
	Token   uint64
}

// Overlap is an interval in which two or more processes believed they held
// the same key's lease at once: mutual exclusion was broken there, whether
// or not the storage's fencing caught the consequences.
type Overlap struct {
	Key        string
	Start, End int64
	Holders    []Holder
}

// Beliefs derives the lease beliefs from ops in invocation order. end
// closes the beliefs the history never ended.
func Beliefs(ops []history.Op, end int64) []Belief {
	type pk struct {
		p int
		k string
	}
	open := map[pk]int{}
	var out []Belief
	for i := range ops {
		o := &ops[i]
		id := pk{o.Process, o.Key}
		if o.F == history.Acquire && o.Type == history.OK {
			if j, ok := open[id]; ok {
				out[j].End = o.Call
			}
			open[id] = len(out)
			out = append(out, Belief{Process: o.Process, Key: o.Key, Token: o.Token, Start: o.Ended(), End: end, Acquire: o.InvokeIndex})
			continue
		}
		j, ok := open[id]
		if !ok {
			continue
		}
		switch {
		case o.F == history.Release:
			out[j].End = o.Call
		case o.Error == lockclient.ErrorLeaseLost:
			out[j].End = o.Ended()
		case o.Type == history.Info:
			if o.Done > 0 {
				out[j].End = o.Done
			}
		default:
			continue
		}
		out[j].End = max(out[j].End, out[j].Start)
		delete(open, id)
	}
	return out
}

// Overlaps finds, key by key, the intervals in which more than one belief
// was held. Beliefs that only touch do not overlap.
func Overlaps(bs []Belief) []Overlap {
	byKey := map[string][]int{}
	var keys []string
	for i, b := range bs {
		if _, ok := byKey[b.Key]; !ok {
			keys = append(keys, b.Key)
		}
		byKey[b.Key] = append(byKey[b.Key], i)
	}
	sort.Strings(keys)
	type edge struct {
		t     int64
		start bool
		i     int
	}
	var out []Overlap
	for _, k := range keys {
		var edges []edge
		for _, i := range byKey[k] {
			if bs[i].End <= bs[i].Start {
				continue
			}
			edges = append(edges, edge{bs[i].Start, true, i}, edge{bs[i].End, false, i})
		}
		sort.Slice(edges, func(a, b int) bool {
			if edges[a].t != edges[b].t {
				return edges[a].t < edges[b].t
			}
			return !edges[a].start && edges[b].start // ends first: touching is not overlapping
		})
		active := map[int]bool{}
		var cur *Overlap
		seen := map[int]bool{}
		for _, e := range edges {
			if e.start {
				active[e.i] = true
			} else {
				delete(active, e.i)
			}
			switch {
			case len(active) >= 2 && cur == nil:
				cur = &Overlap{Key: k, Start: e.t}
				seen = map[int]bool{}
				fallthrough
			case len(active) >= 2:
				for i := range active {
					if !seen[i] {
						seen[i] = true
						cur.Holders = append(cur.Holders, Holder{bs[i].Process, bs[i].Token})
					}
				}
			case cur != nil:
				cur.End = e.t
				sort.Slice(cur.Holders, func(a, b int) bool { return cur.Holders[a].Token < cur.Holders[b].Token })
				out = append(out, *cur)
				cur = nil
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Start < out[b].Start })
	return out
}
