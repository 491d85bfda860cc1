package zookeeper

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// AgreementQuery says how AskState asks.
const AgreementQuery = "the srvr four-letter word on each server (its Zxid, the last transaction it applied), until every server has applied the same one"

// AskState asks each server the last transaction it applied (srvr's
// Zxid) until they are all at the same one or ctx nears its end. A lock
// node's czxid is the token, so the ensemble's zxid — the least any
// server reached — must be at least the highest token granted; servers
// that stay at different zxids with no client left are named.
func (d *DB) AskState(ctx context.Context, c nodes.Nodes, nodes []string) (backends.ServiceState, error) {
	st := backends.ServiceState{Query: AgreementQuery}
	zxids, errs := backends.Settle(ctx, nodes, 2*time.Second, func(ctx context.Context, n string) (uint64, error) {
		out, err := srvr(ctx, c, n)
		if err != nil {
			return 0, err
		}
		return parseZxid(n, out)
	}, func(z []uint64, errs []error) bool {
		for i := range z {
			if errs[i] != nil || z[i] != z[0] {
				return false
			}
		}
		return true
	})
	low, lowNode := uint64(0), ""
	for i, n := range nodes {
		m := backends.MemberState{Node: n}
		if errs[i] != nil {
			m.Error = errs[i].Error()
		} else {
			m.State = fmt.Sprintf("zxid %#x", zxids[i])
			if lowNode == "" || zxids[i] < low {
				low, lowNode = zxids[i], n
			}
		}
		st.Members = append(st.Members, m)
	}
	if lowNode != "" {
		st.Counters = []backends.Counter{{What: "the ensemble's zxid", Value: low, Node: lowNode}}
	}
	return st, nil
}

var zxidLine = regexp.MustCompile(`(?m)^Zxid: (0x[0-9a-fA-F]+)`)

func parseZxid(node, out string) (uint64, error) {
	m := zxidLine.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("%s: srvr has no Zxid line: %q", node, out)
	}
	return strconv.ParseUint(m[1][2:], 16, 64)
}
