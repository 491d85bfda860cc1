package nemesis

import (
	"errors"
	"strings"
	"testing"
)

// A power fault needs the backend's data directory: one whose servers
// keep nothing on disk (the memory backend's lockd) is refused before
// anything starts, with the reason.
func TestPowerFaultsNeedADataDirectory(t *testing.T) {
	for _, n := range []string{"power-loss", "power-loss-leader", "power-loss-all"} {
		err := Check(n, Settings{Backend: "memory", Docker: true, Servers: 1})
		var u *Unavailable
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "keep nothing on a disk") {
			t.Errorf("%s without a data directory: %v, want an *Unavailable saying why", n, err)
		}
		if err := Check(n, Settings{Backend: "etcd", Docker: true, Servers: 3, DataDir: "/var/lib/fencecheck/etcd"}); err != nil {
			t.Errorf("%s with a data directory: %v", n, err)
		}
		if !Prepares([]string{n}) {
			t.Errorf("%s has no Prepare step: its layer must be in place before the servers start", n)
		}
	}
	if got := DiskDir("/var/lib/fencecheck/etcd/"); got != "/var/lib/fencecheck/etcd.disk" {
		t.Errorf("DiskDir = %q", got)
	}
}
