package nats

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// AgreementQuery says how AskState asks.
const AgreementQuery = "each server's own replica of the bucket's stream " + StreamName +
	" (GET /jsz?accounts=true&streams=true on its monitoring port): its first and last sequence and message count"

// goneAfter is how long every server must say it holds no stream before
// the bucket is taken as gone.
const goneAfter = 3 * time.Second

// replica is one server's replica of the bucket's stream; held is false
// when the server answered and holds none.
type replica struct {
	held                  bool
	messages, first, last uint64
	subjects              uint64
}

func (r replica) state() string {
	if !r.held {
		return "no stream " + StreamName
	}
	return fmt.Sprintf("stream %s with sequences %d to %d, %d messages", StreamName, r.first, r.last, r.messages)
}

// AskState asks each server for its replica of the bucket's stream until
// the replicas agree (a follower catching up) or ctx nears its end. The
// token counter is the stream's last sequence — a key's revision is the
// sequence of its message — on the replica that reached the least; a
// bucket that no server holds any more is gone, and with it every
// revision it had handed out.
func (d *DB) AskState(ctx context.Context, c nodes.Nodes, nodes []string) (backends.ServiceState, error) {
	st := backends.ServiceState{Query: AgreementQuery}
	// A stream no server holds is taken as gone only once every server
	// has said so for goneAfter: a server still loading its streams after
	// a restart must not read as a loss.
	var goneSince time.Time
	reps, errs := backends.Settle(ctx, nodes, 2*time.Second, func(ctx context.Context, n string) (replica, error) {
		body, err := backends.HTTPGetInNode(ctx, c, n, MonitorPort, "/jsz?accounts=true&streams=true")
		if err != nil {
			return replica{}, err
		}
		return parseReplica(n, body)
	}, func(reps []replica, errs []error) bool {
		for i := range reps {
			if errs[i] != nil || reps[i] != reps[0] {
				goneSince = time.Time{}
				return false
			}
		}
		if !reps[0].held {
			if goneSince.IsZero() {
				goneSince = time.Now()
			}
			return time.Since(goneSince) >= goneAfter
		}
		return true
	})
	var low *replica
	lowNode, answered := "", 0
	for i, n := range nodes {
		m := backends.MemberState{Node: n}
		if errs[i] != nil {
			m.Error = errs[i].Error()
			st.Members = append(st.Members, m)
			continue
		}
		answered++
		r := reps[i]
		m.State = r.state()
		if r.held {
			m.Detail = fmt.Sprintf("%d subjects", r.subjects)
			if low == nil || r.last < low.last {
				low, lowNode = &reps[i], n
			}
		}
		st.Members = append(st.Members, m)
	}
	switch {
	case low != nil:
		st.Counters = []backends.Counter{{What: fmt.Sprintf("the bucket's last sequence (stream %s)", StreamName), Value: low.last, Node: lowNode}}
	case answered > 0:
		st.Counters = []backends.Counter{{What: fmt.Sprintf("the lock bucket %s (stream %s)", Bucket, StreamName),
			Gone: fmt.Sprintf("no server that answered holds the stream %s", StreamName)}}
	}
	return st, nil
}

// parseReplica reads the bucket stream's replica from a server's /jsz.
func parseReplica(node, body string) (replica, error) {
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					Messages    uint64 `json:"messages"`
					FirstSeq    uint64 `json:"first_seq"`
					LastSeq     uint64 `json:"last_seq"`
					NumSubjects uint64 `json:"num_subjects"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := json.Unmarshal([]byte(body), &jsz); err != nil {
		return replica{}, fmt.Errorf("%s: /jsz answered %q: %w", node, tailOf(body, 200), err)
	}
	for _, a := range jsz.Accounts {
		for _, s := range a.Streams {
			if s.Name == StreamName {
				return replica{held: true, messages: s.State.Messages, first: s.State.FirstSeq, last: s.State.LastSeq, subjects: s.State.NumSubjects}, nil
			}
		}
	}
	return replica{}, nil
}
