package harness

import (
	"testing"
	"time"
)

// Two runs that start in the same millisecond get distinct test ids (CI
// failed when two parallel subtests both became etcd-121508.443 and each
// found the other's containers in its way).
func TestTestIDsOfOneMillisecondDiffer(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 15, 8, 443_000_000, time.UTC)
	cfg := &Config{Backend: "etcd"}
	a, b, c := testID(cfg, at), testID(cfg, at), testID(cfg, at)
	if a != "etcd-121508.443" || b != "etcd-121508.443-2" || c != "etcd-121508.443-3" {
		t.Errorf("ids %q, %q, %q", a, b, c)
	}
	if other := testID(&Config{Backend: "redis"}, at); other != "redis-121508.443" {
		t.Errorf("another backend's id: %q", other)
	}
}
