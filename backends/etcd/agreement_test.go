package etcd

import (
	"strings"
	"testing"
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
