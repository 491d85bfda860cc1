package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// AgreementQuery says how AskState asks.
const AgreementQuery = "the one server's token counters: each key's token in fencecheck_leases (lease), the sequence fencecheck_tokens (advisory)"

// AskState asks the one server — there are no members to compare — for
// the counters its recipe hands tokens out from: the lease table's token
// per key, or the advisory recipe's sequence for every key. A server
// that lost committed rows (fsync off, a power cut) hands them out again.
func (d *DB) AskState(ctx context.Context, c nodes.Nodes, nodes []string) (backends.ServiceState, error) {
	st := backends.ServiceState{Query: AgreementQuery}
	if d.srv == nil {
		return st, nil
	}
	node := d.srv.node
	var sql string
	switch d.Recipe {
	case RecipeLease:
		sql = "SELECT key, token FROM fencecheck_leases"
	case RecipeAdvisory:
		sql = "SELECT '', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencecheck_tokens"
	default:
		return st, nil
	}
	out, err := backends.AskInNode(ctx, c, node, []string{"runuser", "-u", User, "--", BinDir + "/psql", "-X", "-A", "-t", "-F", " ",
		"-h", SocketDir, "-p", fmt.Sprint(Port), "-d", Database, "-c", sql})
	if err != nil {
		st.Members = []backends.MemberState{{Node: node, Error: err.Error()}}
		return st, nil
	}
	st.Members = []backends.MemberState{{Node: node, Detail: "the one server"}}
	for line := range strings.Lines(out) {
		key, value, ok := strings.Cut(strings.TrimRight(line, "\n"), " ")
		v, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if !ok || err != nil {
			continue
		}
		what := "the sequence fencecheck_tokens"
		if key != "" {
			what = "the token of " + key + " in fencecheck_leases"
		}
		st.Counters = append(st.Counters, backends.Counter{Key: key, What: what, Value: v, Node: node})
	}
	return st, nil
}
