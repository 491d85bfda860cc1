package etcd

import (
	"strings"
	"testing"
)

// The JSON gateway's answers to a range of one key, as etcd 3.4 and 3.6
// write them.
func TestParseRange(t *testing.T) {
	head := "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
	cases := map[string]int64{
		head + `{"header":{"cluster_id":"1","revision":"9"},"kvs":[{"key":"L2ZlbmNlY2hlY2svZGF0YS9rMA==","create_revision":"5","mod_revision":"9","version":"3","value":"NDI="}],"count":"1"}`: 42,
		head + `{"header":{"cluster_id":"1","revision":"9"}}`: 0,
	}
	for answer, want := range cases {
		if v, err := parseRange("n1", answer); err != nil || v != want {
			t.Errorf("%q: %d, %v; want %d", answer, v, err, want)
		}
	}
	_, err := parseRange("n1", head+`{"kvs":[{"value":"eA=="}]}`) // "x"
	if err == nil || !strings.Contains(err.Error(), "not a decimal integer") {
		t.Errorf("a value that is no number: %v", err)
	}
	if _, err := parseRange("n1", "HTTP/1.0 503 Service Unavailable\r\n\r\n{}"); err == nil {
		t.Error("a 503 read as a value")
	}
}
