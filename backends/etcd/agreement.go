package etcd

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// AgreementQuery says how AskState asks.
const AgreementQuery = "each member's revision (maintenance Status), then HashKV at the lowest of them on every member " +
	"(etcd 3.4 and 3.5, whose JSON gateway hides HashKV behind Hash: a serializable Range of the whole keyspace at that revision, digested)"

// AskState asks every member its revision until they agree on it (a
// follower catching up) or ctx nears its end, then each member's HashKV
// at the lowest revision any of them reached: what etcd's robustness
// tests compare at the end of theirs. The token counter is the store's
// revision — a lock key's create revision is the token — on the member
// that reached the least. Every question goes through etcd's JSON gateway
// from inside the node, as Primary's do.
func (d *DB) AskState(ctx context.Context, c nodes.Nodes, nodes []string) (backends.ServiceState, error) {
	return agreeAtLowestRevision(ctx, AgreementQuery, nodes,
		func(ctx context.Context, n string) (int64, error) { return memberRevision(ctx, c, n) },
		func(ctx context.Context, n string, rev int64) (string, error) { return memberHash(ctx, c, n, rev) }), nil
}

// agreeAtLowestRevision is the question both ways of reaching etcd ask
// (its servers through their nodes, the user's by address): each
// member's revision until they agree (a follower catching up) or ctx
// nears its end, then each member's state, hash, at the lowest revision
// any of them reached. The token counter is that revision, on the member
// that reached it: a lock key's create revision is the token.
func agreeAtLowestRevision(ctx context.Context, query string, members []string,
	revision func(ctx context.Context, member string) (int64, error),
	hash func(ctx context.Context, member string, rev int64) (string, error)) backends.ServiceState {
	st := backends.ServiceState{Query: query}
	revs, errs := backends.Settle(ctx, members, 4*time.Second, revision, func(revs []int64, errs []error) bool {
		for i := range revs {
			if errs[i] != nil || revs[i] != revs[0] {
				return false
			}
		}
		return true
	})
	low, lowMember := int64(-1), ""
	for i, m := range members {
		if errs[i] == nil && (low < 0 || revs[i] < low) {
			low, lowMember = revs[i], m
		}
	}
	if low >= 0 {
		st.Counters = []backends.Counter{{What: "the store's revision", Value: uint64(low), Node: lowMember}}
	}
	for i, n := range members {
		m := backends.MemberState{Node: n}
		if errs[i] != nil {
			m.Error = errs[i].Error()
		} else if state, err := hash(ctx, n, low); err != nil {
			m.Error = err.Error()
		} else {
			m.State = state
			m.Detail = fmt.Sprintf("at revision %d", revs[i])
		}
		st.Members = append(st.Members, m)
	}
	return st
}

// memberRevision is the member's own revision, from its Status answer's
// header, serializable: the member's, not the leader's.
func memberRevision(ctx context.Context, c nodes.Nodes, node string) (int64, error) {
	body, err := backends.HTTPPostInNode(ctx, c, node, ClientPort, "/v3/maintenance/status", "{}")
	if err != nil {
		return 0, err
	}
	var s struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	if err := json.Unmarshal([]byte(unquoteNumbers(body)), &s); err != nil {
		return 0, fmt.Errorf("%s: status answered %q: %w", node, tailOf(body, 200), err)
	}
	return strconv.ParseInt(s.Header.Revision.String(), 10, 64)
}

// memberHash is what the member holds at rev: HashKV's hash of every
// revision from its compaction to rev, or, where the gateway has no
// HashKV (3.4 and 3.5 route /v3/maintenance/hash to Hash, a hash of the
// whole backend file, which members need not share), a digest of a
// serializable Range of the whole keyspace at rev: every key with its
// create and mod revisions, version, lease and value.
func memberHash(ctx context.Context, c nodes.Nodes, node string, rev int64) (string, error) {
	body, err := backends.HTTPPostInNode(ctx, c, node, ClientPort, "/v3/maintenance/hashkv", fmt.Sprintf(`{"revision":%d}`, rev))
	if err == nil {
		return parseHashKV(node, rev, body)
	}
	if !strings.Contains(err.Error(), " 404 ") {
		return "", err
	}
	all := base64.StdEncoding.EncodeToString([]byte{0})
	body, err = backends.HTTPPostInNode(ctx, c, node, ClientPort, "/v3/kv/range",
		fmt.Sprintf(`{"key":"%s","range_end":"%s","revision":%d,"serializable":true}`, all, all, rev))
	if err != nil {
		return "", err
	}
	return rangeDigest(node, rev, body)
}

// parseHashKV reads HashKV's answer: "HashKV 0x5c1e8a2f at revision 812
// (compacted at 1)".
func parseHashKV(node string, rev int64, body string) (string, error) {
	var h struct {
		Hash            json.Number `json:"hash"`
		CompactRevision json.Number `json:"compact_revision"`
	}
	if err := json.Unmarshal([]byte(unquoteNumbers(body)), &h); err != nil {
		return "", fmt.Errorf("%s: hashkv answered %q: %w", node, tailOf(body, 200), err)
	}
	hash, err := strconv.ParseUint(string(h.Hash), 10, 32)
	if h.Hash == "" {
		hash, err = 0, nil // a zero hash is omitted
	}
	if err != nil {
		return "", fmt.Errorf("%s: hashkv answered hash %q", node, h.Hash)
	}
	compact := string(h.CompactRevision)
	if compact == "" {
		compact = "0"
	}
	return fmt.Sprintf("HashKV %#08x at revision %d (compacted at %s)", hash, rev, compact), nil
}

// rangeDigest digests a Range answer's keys: "keyspace digest 1a2b3c4d5e6f
// of 12 keys at revision 812".
func rangeDigest(node string, rev int64, body string) (string, error) {
	var r struct {
		Kvs []struct {
			Key            string      `json:"key"`
			CreateRevision json.Number `json:"create_revision"`
			ModRevision    json.Number `json:"mod_revision"`
			Version        json.Number `json:"version"`
			Value          string      `json:"value"`
			Lease          json.Number `json:"lease"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal([]byte(unquoteNumbers(body)), &r); err != nil {
		return "", fmt.Errorf("%s: range answered %q: %w", node, tailOf(body, 200), err)
	}
	h := sha256.New()
	for _, kv := range r.Kvs {
		fmt.Fprintf(h, "%s %s %s %s %s %s\n", kv.Key, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease, kv.Value)
	}
	return fmt.Sprintf("keyspace digest %x of %d keys at revision %d", h.Sum(nil)[:6], len(r.Kvs), rev), nil
}
