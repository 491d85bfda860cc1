package etcd

import "testing"

// The gateway's answer, as etcd 3.6 writes it: 64-bit ids as strings,
// read exactly (they exceed a float64's precision).
func TestParseStatusReadsTheIDsExactly(t *testing.T) {
	answer := "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" +
		`{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"1","raft_term":"2"},` +
		`"version":"3.6.16","dbSize":"20480","leader":"10276657743932975437","raftIndex":"4","raftTerm":"2"}`
	st, err := parseStatus("n1", answer)
	if err != nil {
		t.Fatal(err)
	}
	if st.member != "10276657743932975437" || st.leader != "10276657743932975437" {
		t.Errorf("got %+v", st)
	}
	if _, err := parseStatus("n1", "HTTP/1.0 404 Not Found\r\n\r\nnope"); err == nil {
		t.Error("a 404 was read as a status")
	}
	if _, err := parseStatus("n1", ""); err == nil {
		t.Error("no answer was read as a status")
	}
}
