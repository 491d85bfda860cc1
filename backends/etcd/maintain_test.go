package etcd

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
)

func TestParseEvery(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "0": 0, "0s": 0, "1s": time.Second, "250ms": 250 * time.Millisecond} {
		got, err := parseEvery(v)
		if err != nil || got != want {
			t.Errorf("parseEvery(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"x", "1", "10ms", "-1s"} {
		if _, err := parseEvery(v); err == nil {
			t.Errorf("parseEvery(%q) was taken", v)
		}
	}
}

// The flags reach the DB; a bad value is refused naming its flag, before
// anything is created.
func TestUpkeepFlagsReachTheDB(t *testing.T) {
	info, ok := registry.Lookup("etcd")
	if !ok {
		t.Fatal("etcd is not registered")
	}
	s := registry.Setup{ServerVersion: "3.6", Nodes: 3, Options: map[string]string{CompactEveryFlag.Name: "1s", DefragEveryFlag.Name: "2s"}}
	db, _, err := info.NewDB(s)
	if err != nil {
		t.Fatal(err)
	}
	d := db.(*DB)
	if d.CompactEvery != time.Second || d.DefragEvery != 2*time.Second {
		t.Errorf("got compact every %s, defrag every %s", d.CompactEvery, d.DefragEvery)
	}
	if _, ok := db.(backends.Maintainer); !ok {
		t.Error("etcd's DB is not a backends.Maintainer")
	}
	if got := d.upkeepInfo(); got != "compacted at the current revision every 1s, every member defragmented every 2s" {
		t.Errorf("upkeepInfo = %q", got)
	}
	s.Options = map[string]string{DefragEveryFlag.Name: "5ms"}
	if _, _, err := info.NewDB(s); err == nil || !strings.Contains(err.Error(), DefragEveryFlag.Name) {
		t.Errorf("5ms was taken, or the error does not name the flag: %v", err)
	}
	s.Options = nil
	db, _, err = info.NewDB(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := db.(*DB).upkeepInfo(); got != "" {
		t.Errorf("no upkeep asked, yet upkeepInfo = %q", got)
	}
}

func TestCompactionRequestIsPhysical(t *testing.T) {
	if got := compactionRequest(812); got != `{"revision":812,"physical":true}` {
		t.Errorf("got %s", got)
	}
}

// The gateway's answers, as etcd 3.5 writes them: a compaction's header
// carries the revision; a defragmentation's may carry none.
func TestAnswerRevision(t *testing.T) {
	compacted := `{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"812","raft_term":"2"}}`
	if got := answerRevision(compacted); got != "the member at revision 812" {
		t.Errorf("got %q", got)
	}
	defragged := `{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","raft_term":"2"}}`
	if got := answerRevision(defragged); !strings.HasPrefix(got, "answered ") {
		t.Errorf("got %q", got)
	}
}
