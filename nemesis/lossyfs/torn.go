package lossyfs

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Torn says what of a file's unsynced writes a cut lets survive. By
// default none does: every file returns to its last synced content. A
// real disk often keeps more, and not in order: a write in flight when
// the power went is half on the platter, and the kernel writes dirty
// pages back in an order of its own. Recovery code that trusts a
// record's length or checksum is tested only by a cut that keeps part of
// what was never synced. (lazyfs has both, as injections of its own:
// docs/power-loss.md.)
type Torn string

const (
	// TornNone keeps nothing unsynced.
	TornNone Torn = ""
	// TornOp tears one write: of one unsynced write drawn among every
	// file's, the part before a page boundary inside it reaches the
	// disk and its tail is lost (a write within one page survives whole
	// or not at all, drawn); every other unsynced write is lost.
	TornOp Torn = "torn-op"
	// TornSeq keeps a random subset of each file's unsynced writes, each
	// write drawn on its own (one in two), so a later write may survive
	// where an earlier one did not.
	TornSeq Torn = "torn-seq"
)

// Torns are the accepted values, for errors.
var Torns = []Torn{TornOp, TornSeq}

// ParseTorn reads a torn mode: "" or "none" is TornNone.
func ParseTorn(s string) (Torn, error) {
	if s == "" || s == "none" {
		return TornNone, nil
	}
	if t := Torn(s); slices.Contains(Torns, t) {
		return t, nil
	}
	return TornNone, fmt.Errorf("%q is no torn mode (accepted: none, %s, %s)", s, TornOp, TornSeq)
}

// keepSeq is TornSeq's choice from one file's writes.
func keepSeq(rng *rand.Rand) func([]Write) []Write {
	return func(ws []Write) []Write {
		var out []Write
		for _, w := range ws {
			if rng.IntN(2) == 0 {
				out = append(out, w)
			}
		}
		return out
	}
}

// tear is what survives of w under TornOp: the part before a page
// boundary inside it, drawn among its boundaries; a write that crosses
// none survives whole or not at all, drawn.
func tear(w Write, rng *rand.Rand) []Write {
	first := (w.Off/PageSize + 1) * PageSize
	var bounds []int64
	for b := first; b < w.End(); b += PageSize {
		bounds = append(bounds, b)
	}
	if len(bounds) == 0 {
		if rng.IntN(2) == 0 {
			return []Write{w}
		}
		return nil
	}
	b := bounds[rng.IntN(len(bounds))]
	return []Write{{Off: w.Off, Data: w.Data[:b-w.Off]}}
}
