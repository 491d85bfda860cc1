package redis

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// AgreementQuery says how AskState asks.
const AgreementQuery = "each server's INFO replication (its role and offset, read, not compared: a master pings its replicas and moves its offset on its own); " +
	"the token counters fencecheck:token:{KEY} on the master (SCAN, then GET)"

// AskState asks each server its role and replication offset, and the
// master — the one server, or the one the Sentinels name — the value of
// every token counter the setnx-incr recipes INCR. Each counter must be
// at least the highest token granted on its key: a master that restarted
// without its data, or a replica promoted before it had the last INCR,
// hands tokens out again from below. Redlock's five independent masters
// have no one counter to hold, and are asked nothing of counters.
func (d *DB) AskState(ctx context.Context, c nodes.Nodes, nodes []string) (backends.ServiceState, error) {
	st := backends.ServiceState{Query: AgreementQuery}
	for _, n := range nodes {
		m := backends.MemberState{Node: n}
		out, err := backends.AskInNode(ctx, c, n, []string{"redis-cli", "-h", "127.0.0.1", "-p", fmt.Sprint(Port), "INFO", "replication"})
		if err != nil {
			m.Error = err.Error()
		} else {
			m.Detail = replicationDetail(out)
		}
		st.Members = append(st.Members, m)
	}
	master, err := d.Primary(ctx, c)
	if err != nil || master == "" {
		return st, nil
	}
	script := fmt.Sprintf(`for k in $(redis-cli -h 127.0.0.1 -p %d --scan --pattern 'fencecheck:token:*'); do printf '%%s %%s\n' "$k" "$(redis-cli -h 127.0.0.1 -p %d GET "$k")"; done`, Port, Port)
	out, err := backends.AskInNode(ctx, c, master, []string{"bash", "-c", script})
	if err != nil {
		return st, nil
	}
	st.Counters = parseCounters(master, out)
	return st, nil
}

var (
	roleLine   = regexp.MustCompile(`(?m)^role:(\S+)`)
	offsetLine = regexp.MustCompile(`(?m)^(?:master_repl_offset|slave_repl_offset):(\d+)`)
)

// replicationDetail is "master, offset 81234" from INFO replication.
func replicationDetail(info string) string {
	role, offset := "role unknown", "?"
	if m := roleLine.FindStringSubmatch(info); m != nil {
		role = m[1]
	}
	if m := offsetLine.FindStringSubmatch(info); m != nil {
		offset = m[1]
	}
	return fmt.Sprintf("%s, replication offset %s", role, offset)
}

// parseCounters reads "fencecheck:token:{k0} 448" lines.
func parseCounters(node, out string) []backends.Counter {
	var cs []backends.Counter
	for line := range strings.Lines(out) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !strings.HasPrefix(name, "fencecheck:token:{") || !strings.HasSuffix(name, "}") {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if err != nil {
			continue
		}
		key := strings.TrimSuffix(strings.TrimPrefix(name, "fencecheck:token:{"), "}")
		cs = append(cs, backends.Counter{Key: key, What: "the counter " + name, Value: v, Node: node})
	}
	return cs
}
