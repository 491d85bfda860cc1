package etcd

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
)

// The gateway's answers as etcd 3.6 writes them: 64-bit numbers quoted,
// a zero hash omitted.
func TestParseHashKV(t *testing.T) {
	body := `{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"815","raft_term":"2"},"hash":1545382447,"compact_revision":"-1","hash_revision":"812"}`
	got, err := parseHashKV("n1", 812, body)
	if err != nil || got != "HashKV 0x5c1caa2f at revision 812 (compacted at -1)" {
		t.Errorf("got %q, %v", got, err)
	}
	if got, err := parseHashKV("n1", 1, `{"header":{"revision":"1"}}`); err != nil || !strings.HasPrefix(got, "HashKV 0x00000000 ") {
		t.Errorf("zero hash: %q, %v", got, err)
	}
}

// A Range answer's digest depends on every field of every key and on
// nothing else (the header's revision differs from member to member).
func TestRangeDigest(t *testing.T) {
	a := `{"header":{"revision":"815","member_id":"1"},"kvs":[{"key":"aw==","create_revision":"5","mod_revision":"9","version":"3","value":"MTI="}],"count":"1"}`
	b := `{"header":{"revision":"816","member_id":"2"},"kvs":[{"key":"aw==","create_revision":"5","mod_revision":"9","version":"3","value":"MTI="}],"count":"1"}`
	c := strings.Replace(a, `"mod_revision":"9"`, `"mod_revision":"8"`, 1)
	da, _ := rangeDigest("n1", 812, a)
	db, _ := rangeDigest("n2", 812, b)
	dc, _ := rangeDigest("n3", 812, c)
	if da != db || da == dc || !strings.HasSuffix(da, "of 1 keys at revision 812") {
		t.Errorf("digests %q %q %q", da, db, dc)
	}
}

// Both ways of asking etcd (through its nodes, by address) read their
// answers alike: the counter and every hash at the lowest revision any
// member reached, a member that did not answer named with its error.
func TestAgreeAtLowestRevision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second+500*time.Millisecond)
	defer cancel()
	revs := map[string]int64{"n1": 12, "n2": 10}
	st := agreeAtLowestRevision(ctx, "q", []string{"n1", "n2", "n3"},
		func(_ context.Context, m string) (int64, error) {
			if r, ok := revs[m]; ok {
				return r, nil
			}
			return 0, errors.New(m + ": connection refused")
		},
		func(_ context.Context, m string, rev int64) (string, error) {
			return fmt.Sprintf("hash of %s at %d", m, rev), nil
		})
	if len(st.Counters) != 1 || st.Counters[0].Value != 10 || st.Counters[0].Node != "n2" {
		t.Errorf("counters %+v, want the store's revision 10 on n2", st.Counters)
	}
	want := []backends.MemberState{
		{Node: "n1", State: "hash of n1 at 10", Detail: "at revision 12"},
		{Node: "n2", State: "hash of n2 at 10", Detail: "at revision 10"},
		{Node: "n3", Error: "n3: connection refused"},
	}
	if !reflect.DeepEqual(st.Members, want) || st.Query != "q" {
		t.Errorf("members %+v, want %+v", st.Members, want)
	}
}
