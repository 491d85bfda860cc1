package harness

import (
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/reports"
)

// expiredGrants counts the grants the lock service made on a lease that
// had already expired, among every grant of the run (the final reads'
// too), as the backend tells them from the acquires' completions
// (registry.Info.ExpiredGrant). Where it cannot tell, it says why.
func expiredGrants(t *Test, events []history.Event) *reports.ExpiredGrants {
	b := t.info
	switch {
	case t.client != nil:
		return &reports.ExpiredGrants{Why: "a --client program's acquisitions are its own: fencecheck cannot tell which of its grants were on an expired lease"}
	case b.ExpiredGrant == nil:
		return &reports.ExpiredGrants{Why: b.NoExpiredGrants}
	}
	g := &reports.ExpiredGrants{Counted: true}
	for _, e := range events {
		if e.IsNemesis() || e.F != history.Acquire || e.Type == history.Invoke {
			continue
		}
		expired := b.ExpiredGrant(t.cfg.Recipe, e)
		if expired {
			g.Count++
		}
		if expired || e.Type == history.OK {
			g.Grants++
		}
	}
	return g
}
