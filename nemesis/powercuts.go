package nemesis

import "time"

// A power cut is only evidence when it dropped something and the lock
// service granted after it (models.PowerCuts). The history records when
// each cut began; what it dropped is known only to the layer's daemon in
// each node, which answers it to the cut (lossyfs.Dropped). PowerCut
// keeps those answers, one per cut, for the run's results.

// CutDrop is what one power cut made the layer forget, summed over the
// nodes it cut.
type CutDrop struct {
	Fault string
	Nodes []string
	Files int
	Bytes int64
	// Went is when the last of the cut's nodes lost its power, as its
	// layer froze (zero when no layer said): a one-instant cut records
	// its start first and cuts up to a second later, so a grant between
	// the two was acknowledged before the power went, and proves nothing
	// about the cut.
	Went time.Time
}

// Drops are what each cut p made dropped, in the order of the cuts; a
// cut that failed keeps nothing (the schedule records its error).
func (p *PowerCut) Drops() []CutDrop {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]CutDrop(nil), p.drops...)
}

// DropsOf are the drops of every power fault among faults, each fault's in
// the order of its cuts.
func DropsOf(faults []Fault) []CutDrop {
	var out []CutDrop
	for _, f := range faults {
		if p, ok := f.(*PowerCut); ok {
			out = append(out, p.Drops()...)
		}
	}
	return out
}
