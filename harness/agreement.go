package harness

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// How long the members get to settle and answer at the end of a run: a
// follower catching up, a restarted server replaying its log. One that
// has not answered by then is recorded as silent.
const agreementWait = 12 * time.Second

// stateAsker is a system whose servers can say what they hold at the end
// of a run.
type stateAsker interface {
	askState(ctx context.Context) (*models.ServiceState, error)
}

// askAgreement asks the servers, once the final reads are done and every
// fault healed, what each member holds and what the token counters have
// reached (backends.StateAsker). It never fails the run: a system that
// cannot be asked records nothing, and one whose question failed says so
// in the log. The comparison itself is the check's (models.CheckAgreement).
func (r *run) askAgreement() *models.ServiceState {
	a, ok := r.sys.(stateAsker)
	if !ok || r.sys == nil {
		return nil
	}
	r.marks.mark("agreement")
	ctx, cancel := context.WithTimeout(r.stop, agreementWait)
	defer cancel()
	st, err := a.askState(ctx)
	if err != nil {
		r.logf("asking the servers what they hold: %v", err)
		return nil
	}
	if st == nil {
		return nil
	}
	for _, m := range st.Members {
		switch {
		case m.Error != "":
			r.logTo(false, "agreement: %s did not answer: %s", m.Node, m.Error)
		case m.Detail != "":
			r.logTo(false, "agreement: %s holds %q (%s)", m.Node, m.State, m.Detail)
		default:
			r.logTo(false, "agreement: %s holds %q", m.Node, m.State)
		}
	}
	for _, c := range st.Counters {
		if c.Gone != "" {
			r.logf("agreement: %s is gone: %s", c.What, c.Gone)
			continue
		}
		r.logTo(false, "agreement: %s is %d", c.What, c.Value)
	}
	return st
}

// askState asks the backend's servers, when it can be asked.
func (s *dockerSystem) askState(ctx context.Context) (*models.ServiceState, error) {
	a, ok := s.db.(backends.StateAsker)
	if !ok {
		return nil, nil
	}
	st, err := a.AskState(ctx, s.nodes, s.servers)
	if err != nil {
		return nil, err
	}
	return serviceState(st), nil
}

// serviceState is a backend's answer as the check reads it.
func serviceState(st backends.ServiceState) *models.ServiceState {
	out := &models.ServiceState{Query: st.Query, Members: []models.MemberState{}}
	for _, m := range st.Members {
		out.Members = append(out.Members, models.MemberState{Node: m.Node, State: m.State, Detail: m.Detail, Error: m.Error})
	}
	for _, c := range st.Counters {
		out.Counters = append(out.Counters, models.ServiceCounter{Key: c.Key, What: c.What, Value: c.Value, Gone: c.Gone, Node: c.Node})
	}
	return out
}

// agreementOf is the comparison of what the servers held with what the
// history shows they acknowledged; nil when they were not asked.
func agreementOf(st *models.ServiceState, ops []history.Op) *models.Agreement {
	if st == nil {
		return nil
	}
	a := models.CheckAgreement(*st, ops)
	return &a
}
