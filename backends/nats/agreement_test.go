package nats

import "testing"

// A server's /jsz with the bucket's stream, and one without it (the
// stream lost with the server's unsynced files).
func TestParseReplica(t *testing.T) {
	with := `{"server_id":"N","account_details":[{"name":"$G","stream_detail":[{"name":"KV_fencecheck","cluster":{"leader":"n2"},"state":{"messages":4,"bytes":400,"first_seq":37,"last_seq":52,"num_subjects":4,"consumer_count":0}}]}]}`
	r, err := parseReplica("n1", with)
	if err != nil || !r.held || r.first != 37 || r.last != 52 || r.messages != 4 {
		t.Fatalf("got %+v, %v", r, err)
	}
	if r.state() != "stream KV_fencecheck with sequences 37 to 52, 4 messages" {
		t.Errorf("state %q", r.state())
	}
	r, err = parseReplica("n1", `{"server_id":"N","account_details":[{"name":"$G"}]}`)
	if err != nil || r.held || r.state() != "no stream KV_fencecheck" {
		t.Errorf("without the stream: %+v, %v", r, err)
	}
	if _, err := parseReplica("n1", "<html>"); err == nil {
		t.Error("an unreadable answer was read")
	}
}
