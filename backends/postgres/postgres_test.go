package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencecheck/fencecheck/lockclient"
)

func TestSubnet(t *testing.T) {
	for in, want := range map[string]string{"172.20.0.3/16": "172.20.0.0/16", "192.168.80.5/20": "192.168.80.0/20"} {
		got, err := Subnet(in)
		if err != nil || got != want {
			t.Errorf("Subnet(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Subnet("172.20.0.3"); err == nil {
		t.Error("an address without a prefix was accepted")
	}
}

func TestLockTimeoutsBoundALostSession(t *testing.T) {
	conf := LockTimeouts(2 * time.Second).Conf()
	for _, want := range []string{"idle_session_timeout = '2000ms'", "tcp_keepalives_idle = 1", "tcp_keepalives_interval = 1",
		"tcp_keepalives_count = 2", "tcp_user_timeout = '2000ms'", "fsync = on", "listen_addresses = '*'"} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("lock server conf lacks %q:\n%s", want, conf)
		}
	}
	if conf := StorageTimeouts(2 * time.Second).Conf(); !strings.Contains(conf, "idle_session_timeout = '0ms'\n") {
		t.Errorf("the storage server ends idle sessions:\n%s", conf)
	}
	if got := LockTimeouts(10 * time.Second).KeepalivesIdle; got != 3*time.Second {
		t.Errorf("keepalives idle for a 10s lease = %s, want 3s", got)
	}
}

func TestHBAAdmitsTheTestNetworkOnly(t *testing.T) {
	hba := HBA("172.20.0.0/16")
	if !strings.Contains(hba, "host all postgres 172.20.0.0/16 scram-sha-256\n") || strings.Contains(hba, "0.0.0.0/0") || strings.Contains(hba, " trust") {
		t.Errorf("hba:\n%s", hba)
	}
}

type safe struct{ error }

func (safe) SafeToRetry() bool { return true }

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"server error", &pgconn.PgError{Severity: "ERROR", Code: "55P03", Message: "canceling statement due to lock timeout"}, lockclient.TypeFail},
		{"nothing sent", safe{errors.New("dial: connection refused")}, lockclient.TypeFail},
		{"timeout in flight", context.DeadlineExceeded, lockclient.TypeInfo},
		{"broken connection", errors.New("unexpected EOF"), lockclient.TypeInfo},
	} {
		if got, _ := lockclient.Outcome(outcome(c.err)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if got, _ := lockclient.Outcome(errNotHolder); got != lockclient.TypeFail {
		t.Errorf("a refused release is %s", got)
	}
}

func TestTokensFitBigint(t *testing.T) {
	if _, err := bigint(1 << 63); err == nil {
		t.Error("a token past bigint was accepted")
	}
	if v, err := bigint(42); v != 42 || err != nil {
		t.Errorf("bigint(42) = %d, %v", v, err)
	}
}
