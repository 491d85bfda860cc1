package backends

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// StateAsker is a DB whose servers can say, once a run is over, what each
// member holds and what the service's token counter has reached: the last
// question of a run, as Jepsen's and etcd's robustness tests end theirs.
// The harness asks it after the final reads, with every fault healed, and
// compares (models.CheckAgreement): members that hold different states
// disagree, and a counter below a token the service acknowledged went
// back. Each backend says what its servers offer and how it asked
// (ServiceState.Query); none is named outside its own package.
type StateAsker interface {
	// AskState asks every server node in nodes. It waits, within ctx,
	// until the members have settled (a follower catching up is not a
	// disagreement) and returns what each said; a member that does not
	// answer is kept with its Error. An error means nothing could be
	// asked at all.
	AskState(ctx context.Context, c nodes.Nodes, nodes []string) (ServiceState, error)
}

// ServiceState is what a lock service's members hold at the end of a run.
type ServiceState struct {
	// Query says how each member was asked ("HashKV at one revision on
	// every member").
	Query string
	// Members are each node's answer, in node order. Two members that
	// answered with different States disagree.
	Members []MemberState
	// Counters are the token counters the service keeps: each must be at
	// least the highest token it acknowledged on its keys.
	Counters []Counter
}

// MemberState is one member's answer.
type MemberState struct {
	Node string
	// State is what every member must hold alike, as one comparable
	// string ("hash 0x5c1e8a2f of revisions 1 to 812"); "" when the
	// member did not answer (Error says why).
	State string
	// Detail is what a person reads beside it (the member's own
	// revision, its stream's first and last sequence); not compared.
	Detail string
	Error  string
}

// Counter is a token counter the service holds now.
type Counter struct {
	// Key is the lock key it counts the tokens of; "" counts every key's
	// (etcd's revision, ZooKeeper's zxid, a NATS bucket's sequence).
	Key string
	// What names it as the service keeps it ("the store's revision",
	// "the counter fencecheck:token:{k0}").
	What string
	// Value is what it holds. Gone, when not "", says the counter itself
	// is gone (a lock bucket lost with its stream), whatever Value says.
	Value uint64
	Gone  string
	// Node is the member that answered ("" when the answer is the
	// service's, not one member's).
	Node string
}

// HTTPPostInNode posts body (JSON) to path on the server listening on
// port in node, from inside the node as HTTPGetInNode asks, and returns
// the body of a 200 answer. The body goes through printf in the node's
// shell: it may hold no quote or backslash.
func HTTPPostInNode(ctx context.Context, c nodes.Nodes, node string, port int, path, body string) (string, error) {
	if strings.ContainsAny(body, `'\`) {
		return "", fmt.Errorf("%s: a body with a quote or a backslash cannot be posted from the node's shell: %q", node, body)
	}
	req := fmt.Sprintf(`POST %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s`, path, len(body), strings.ReplaceAll(body, "%", "%%"))
	out, err := AskInNode(ctx, c, node, []string{"bash", "-c",
		fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf '%s' >&3 && cat <&3`, port, req)})
	if err != nil {
		return "", err
	}
	return HTTPBody(node, path, out)
}

// Settle asks every node with ask until settled says the answers have
// settled or until ctx is within margin of its end, pausing between
// rounds; it returns the last round's answers and errors, in node order.
func Settle[T any](ctx context.Context, nodes []string, margin time.Duration, ask func(ctx context.Context, node string) (T, error), settled func(answers []T, errs []error) bool) ([]T, []error) {
	stopAt := time.Now().Add(time.Hour)
	if d, ok := ctx.Deadline(); ok {
		stopAt = d.Add(-margin)
	}
	for {
		answers := make([]T, len(nodes))
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Go(func() { answers[i], errs[i] = ask(ctx, n) })
		}
		wg.Wait()
		if settled(answers, errs) || ctx.Err() != nil || time.Now().After(stopAt) {
			return answers, errs
		}
		select {
		case <-ctx.Done():
			return answers, errs
		case <-time.After(300 * time.Millisecond):
		}
	}
}
