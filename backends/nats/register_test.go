package nats

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// Debian's 2.9.10 refuses sync_interval in its configuration, so asking
// for it with that build is bad input, said before anything is made; its
// default sync runs, from the node image rather than the core.
func TestSyncIntervalIsRefusedOnDebiansBuild(t *testing.T) {
	b, ok := registry.Lookup(Name)
	if !ok {
		t.Fatal("nats is not registered")
	}
	setup := func(version, sync string) registry.Setup {
		return registry.Setup{Recipe: Recipes[0], ServerVersion: version, Nodes: 3, LeaseTTL: 2 * time.Second,
			Options: map[string]string{SyncFlag: sync}}
	}
	_, _, err := b.NewDB(setup(VersionDebian, SyncAlways))
	var ue *usage.Error
	if !errors.As(err, &ue) || ue.Flag != SyncFlag || !strings.Contains(err.Error(), "sync_interval") || !strings.Contains(err.Error(), DebianVersion) {
		t.Fatalf("2.9 with sync_interval always: %v, want a usage error of --%s naming sync_interval and %s", err, SyncFlag, DebianVersion)
	}
	for _, sync := range []string{"", SyncDefault} {
		db, _, err := b.NewDB(setup(VersionDebian, sync))
		if err != nil {
			t.Fatalf("2.9 with sync %q: %v", sync, err)
		}
		if d := db.(*DB); d.binary() != DebianBinary {
			t.Errorf("2.9 runs %s, want Debian's %s", d.binary(), DebianBinary)
		}
	}
	if b.CoreImage(setup(VersionDebian, "")) {
		t.Error("2.9 would run on the core image, which has no Debian nats-server")
	}
	db, _, err := b.NewDB(setup(VersionModule, SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	if d := db.(*DB); d.binary() != binaryPath || !b.CoreImage(setup(VersionModule, SyncAlways)) {
		t.Errorf("2.15 runs %s (core image %t), want the compiled %s on the core image", d.binary(), b.CoreImage(setup(VersionModule, "")), binaryPath)
	}
	if b.Versions[0] != VersionModule {
		t.Errorf("versions %v: the module build must stay the default", b.Versions)
	}
}
