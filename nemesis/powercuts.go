package nemesis

import (
	"context"
	"math/rand/v2"
	"sync"
)

// A power cut is only evidence when it dropped something and the lock
// service granted after it (models.PowerCuts). The history records when
// each cut began; what it dropped is known only to the layer's daemon in
// each node, which answers it to the drop (lossyfs.Dropped). PowerLoss
// keeps those answers, one per cut, for the run's results.

// CutDrop is what one power cut made the layer forget, summed over the
// nodes it cut.
type CutDrop struct {
	Fault string
	Nodes []string
	Files int
	Bytes int64
}

// PowerLoss is a power fault: the kill fault with the layer's drop after
// each kill, keeping what every cut it made dropped.
type PowerLoss struct {
	*Kill
	mu      sync.Mutex
	pending CutDrop
	drops   []CutDrop
}

func newPowerLossFault(k *Kill) *PowerLoss {
	p := &PowerLoss{Kill: k}
	return p
}

// Start cuts the power (Kill.Start with the drop after it) and keeps what
// the cut dropped once it is made; a cut that failed keeps nothing (the
// schedule records its error).
func (p *PowerLoss) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	p.mu.Lock()
	p.pending = CutDrop{Fault: p.Label}
	p.mu.Unlock()
	ts, err := p.Kill.Start(ctx, rng)
	if err != nil || len(ts) == 0 {
		return ts, err
	}
	p.mu.Lock()
	d := p.pending
	d.Nodes = append([]string(nil), ts...)
	p.drops = append(p.drops, d)
	p.mu.Unlock()
	return ts, nil
}

// dropped adds one node's drop to the cut being made.
func (p *PowerLoss) dropped(files int, bytes int64) {
	p.mu.Lock()
	p.pending.Files += files
	p.pending.Bytes += bytes
	p.mu.Unlock()
}

// Drops are what each cut made dropped, in the order of the cuts.
func (p *PowerLoss) Drops() []CutDrop {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]CutDrop(nil), p.drops...)
}

// DropsOf are the drops of every power fault among faults, each fault's in
// the order of its cuts.
func DropsOf(faults []Fault) []CutDrop {
	var out []CutDrop
	for _, f := range faults {
		if p, ok := f.(*PowerLoss); ok {
			out = append(out, p.Drops()...)
		}
	}
	return out
}
