package nats

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fencecheck/fencecheck/lockclient"
)

// /varz's version is what a run records.
func TestParseVersion(t *testing.T) {
	v, err := parseVersion("n1", `{"server_id":"NA","server_name":"n1","version":"2.15.3","proto":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "2.15.3" || v.Answer != "2.15.3" {
		t.Errorf("got %+v", v)
	}
	for _, bad := range []string{"", "404 page not found", `{"server_id":"NA"}`} {
		if v, err := parseVersion("n1", bad); err == nil {
			t.Errorf("%q was read as %+v", bad, v)
		}
	}
}

// The stream leader is read from the bucket's stream, not from another
// stream or the meta cluster.
func TestParseStreamLeader(t *testing.T) {
	body := `{"server_id":"X","meta_cluster":{"name":"fencecheck","leader":"n1"},"account_details":[{"name":"$G","stream_detail":[` +
		`{"name":"OTHER","cluster":{"leader":"n3"}},{"name":"KV_fencecheck","cluster":{"name":"fencecheck","leader":"n2"}}]}]}`
	l, err := parseStreamLeader("n1", body)
	if err != nil || l != "n2" {
		t.Errorf("got %q, %v", l, err)
	}
	if _, err := parseStreamLeader("n1", `{"account_details":[]}`); err == nil {
		t.Error("a server without the stream named a leader")
	}
}

// Each server's configuration names itself, every route, the data
// directory, and sync_interval only when it is asked for.
func TestConfig(t *testing.T) {
	d := &DB{nodes: []string{"n1", "n2", "n3"}}
	c := d.config("n2")
	for _, want := range []string{`server_name: "n2"`, `store_dir: "` + DataDir + `"`, "nats://n1:6222, nats://n2:6222, nats://n3:6222", "http: \"0.0.0.0:8222\""} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, "sync_interval") {
		t.Errorf("the default sync setting wrote sync_interval:\n%s", c)
	}
	d.Sync = SyncAlways
	if c := d.config("n2"); !strings.Contains(c, "sync_interval: always") {
		t.Errorf("sync always is missing:\n%s", c)
	}
}

func TestCheckSync(t *testing.T) {
	for _, ok := range []string{"", "default", "always"} {
		if err := CheckSync(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if err := CheckSync("2m"); err == nil || !strings.Contains(err.Error(), "default, always") {
		t.Errorf("2m: %v", err)
	}
}

// The bucket is what nats.go's CreateKeyValue makes, with the lease as
// its TTL and a replica on every server.
func TestBucketConfig(t *testing.T) {
	d := &DB{LeaseTTL: 3 * time.Second, nodes: []string{"n1", "n2", "n3", "n4", "n5"}}
	c := d.bucketConfig()
	if c.Name != "KV_fencecheck" || c.MaxAge != 3*time.Second || c.Replicas != 5 || c.MaxMsgsPerSubject != 1 ||
		c.Duplicates != 3*time.Second || c.Storage != jetstream.FileStorage || c.Subjects[0] != "$KV.fencecheck.>" {
		t.Errorf("got %+v", c)
	}
}

func TestAPIAnswerError(t *testing.T) {
	if e := apiAnswerError(`{"type":"io.nats.jetstream.api.v1.stream_create_response","config":{}}`); e != "" {
		t.Errorf("a success read as %q", e)
	}
	e := apiAnswerError(`{"type":"x","error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}}`)
	if !strings.Contains(e, "temporarily unavailable") {
		t.Errorf("got %q", e)
	}
	if e := apiAnswerError("garbage"); e == "" {
		t.Error("garbage read as success")
	}
}

// A refusal by the stream (an API error) and a publish that never left
// are definite; a timeout or a lost connection is unknown.
func TestOutcome(t *testing.T) {
	wrongSeq := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 4"}
	cases := []struct {
		err  error
		want string
	}{
		{wrongSeq, lockclient.TypeFail},
		{jetstream.ErrNoStreamResponse, lockclient.TypeFail},
		{nats.ErrNoResponders, lockclient.TypeFail},
		{nats.ErrReconnectBufExceeded, lockclient.TypeFail},
		{nats.ErrTimeout, lockclient.TypeInfo},
		{errors.New("context deadline exceeded"), lockclient.TypeInfo},
		{nats.ErrConnectionClosed, lockclient.TypeInfo},
	}
	for _, c := range cases {
		if typ, _ := lockclient.Outcome(outcome(c.err)); typ != c.want {
			t.Errorf("%v: %s, want %s", c.err, typ, c.want)
		}
	}
	if !busy(wrongSeq) || !busy(jetstream.ErrKeyExists) || busy(nats.ErrTimeout) {
		t.Error("busy misreads a wrong last sequence")
	}
}

// The servers' own word on their store: where, and whether every write is
// synced, as configured.
func TestCheckStoreAnswer(t *testing.T) {
	always := `{"version":"2.15.3","jetstream":{"config":{"max_memory":1,"store_dir":"/var/lib/fencecheck/nats/jetstream","sync_always":true}}}`
	def := `{"version":"2.15.3","jetstream":{"config":{"max_memory":1,"store_dir":"/var/lib/fencecheck/nats/jetstream","sync_interval":120000000000}}}`
	if err := checkStoreAnswer("n1", always, true); err != nil {
		t.Error(err)
	}
	if err := checkStoreAnswer("n1", def, false); err != nil {
		t.Error(err)
	}
	if err := checkStoreAnswer("n1", def, true); err == nil {
		t.Error("a server without sync_always passed for always")
	}
	if err := checkStoreAnswer("n1", `{"jetstream":{"config":{"store_dir":"/tmp/nats"}}}`, false); err == nil {
		t.Error("a store outside DataDir passed")
	}
	if err := checkStoreAnswer("n1", `{"version":"2.15.3"}`, false); err == nil {
		t.Error("a server without JetStream passed")
	}
}
