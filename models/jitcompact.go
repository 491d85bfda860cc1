package models

import (
	"container/heap"
	"math"
	"slices"
	"sort"

	"github.com/fencecheck/fencecheck/history"
)

// Keeping the streaming check small (see jit.go): unknown ops that can no
// longer take effect are forgotten, and configurations another covers are
// dropped.

// compact forgets unknown ops that can no longer take effect in any
// configuration, drops configurations another one covers, and notes a
// quiescent cut.
func (k *keyCheck) compact() {
	if len(k.unknown) > 0 {
		minFence := uint64(math.MaxUint64)
		for i := range k.configs {
			minFence = min(minFence, k.configs[i].t.fence)
		}
		// Below the lowest fence: refused in every configuration.
		for len(k.byToken) > 0 {
			u := k.byToken[0]
			if k.unknown[u.id] != nil && !dead(reg{fence: minFence}, u.op) {
				break
			}
			heap.Pop(&k.byToken)
			k.forget(u.id)
		}
		// Unknown reads die as soon as a fence reaches their token.
		for _, id := range slices.Clone(k.reads) {
			u := k.unknown[id]
			if u != nil && dead(reg{fence: minFence}, u) {
				k.forget(id)
			}
		}
		// Took effect, or can no longer, in every configuration. With few
		// unknown ops every one is looked at; with many (a recipe without
		// tokens) only those the first configuration let take effect.
		var cands []int32
		if len(k.unknown) <= 64 {
			for id := range k.unknown {
				cands = append(cands, id)
			}
		} else {
			cands = k.configs[0].fired
		}
		var gone []int32
		for _, id := range cands {
			u := k.unknown[id]
			if u == nil {
				continue
			}
			all := true
			for i := range k.configs {
				c := &k.configs[i]
				if !hasID(c.fired, id) && !dead(c.t.reg, u) {
					all = false
					break
				}
			}
			if all {
				gone = append(gone, id)
			}
		}
		for _, id := range gone {
			k.forget(id)
		}
	}
	if len(k.configs) > 1 {
		k.configs = dominant(k.configs)
	}
	if k.nFlight == 0 && len(k.unknown) == 0 {
		k.cut = k.cut[:0]
		for _, c := range k.configs {
			k.cut = append(k.cut, c.t)
		}
		k.window, k.windowOut = k.window[:0], false
	}
}

// forget drops an unknown op from the key and from every configuration.
func (k *keyCheck) forget(id int32) {
	u := k.unknown[id]
	if u == nil {
		return
	}
	delete(k.unknown, id)
	if u.F == history.Read {
		k.reads = slices.DeleteFunc(k.reads, func(x int32) bool { return x == id })
	} else if u.Prev != nil {
		b := slices.DeleteFunc(k.byPrev[*u.Prev], func(x int32) bool { return x == id })
		if len(b) == 0 {
			delete(k.byPrev, *u.Prev)
		} else {
			k.byPrev[*u.Prev] = b
		}
	}
	for i := range k.configs {
		c := &k.configs[i]
		if j, ok := slices.BinarySearch(c.fired, id); ok {
			c.fired = slices.Delete(slices.Clone(c.fired), j, j+1)
			if len(c.fired) == 0 {
				c.fired = nil
			}
		}
	}
}

// alikeBefore reports whether one of ids, not in fired, is an unknown
// write with the same effect as u.
func alikeBefore(unknown map[int32]*history.Op, fired []int32, ids []int32, u *history.Op) bool {
	if u == nil {
		return false
	}
	for _, id := range ids {
		w := unknown[id]
		if w != nil && !hasID(fired, id) && w.Token == u.Token && w.Value != nil && u.Value != nil && *w.Value == *u.Value {
			return true
		}
	}
	return false
}

// dominant drops duplicate configurations and those another covers: of
// two with the same state and the same ops placed, the one that let fewer
// unknown ops take effect can do all the other can.
func dominant(cs []sconfig) []sconfig {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.t.reg != b.t.reg {
			if a.t.value != b.t.value {
				return a.t.value < b.t.value
			}
			return a.t.fence < b.t.fence
		}
		if a.lin != b.lin {
			if a.lin[0] != b.lin[0] {
				return a.lin[0] < b.lin[0]
			}
			return a.lin[1] < b.lin[1]
		}
		return len(a.fired) < len(b.fired)
	})
	out := cs[:0]
	groupStart := 0
	for _, c := range cs {
		if len(out) > 0 && (out[len(out)-1].t.reg != c.t.reg || out[len(out)-1].lin != c.lin) {
			groupStart = len(out)
		}
		covered := false
		for _, d := range out[groupStart:] {
			if subset(d.fired, c.fired) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, c)
		}
	}
	return out
}

// subset reports whether every id of a is in b (both sorted).
func subset(a, b []int32) bool {
	if len(a) > len(b) {
		return false
	}
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
		j++
	}
	return true
}
