package nats

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/backends/registry"
)

// An exact release from 2.10 on is nats-server's own command at exactly
// that version; 2.9 (Debian's, no sync_interval) and what is not a
// release are refused with the reason.
func TestRelease(t *testing.T) {
	for _, v := range []string{"2.10.22", "2.10.23", "2.12.1"} {
		r, err := Release(v)
		if err != nil || r.Module != "github.com/nats-io/nats-server/v2" || r.Pkg != r.Module || r.Main != "" || r.Version != v {
			t.Errorf("Release(%s) = %+v, %v", v, r, err)
		}
	}
	for v, want := range map[string]string{"2.9.10": "2.9 is Debian's package", "1.4.1": "from 2.10.0 on", "2.10": "not an exact nats-server release"} {
		if _, err := Release(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Release(%s): %v, want %q", v, err, want)
		}
	}
	b, _ := registry.Lookup(Name)
	if b.Releases == nil || b.Releases.Check("2.12.1") != nil || b.Releases.Check("2.15") == nil {
		t.Error("the registry entry does not take exact releases")
	}
}

// The run's compiled server is the release it names, or the series
// build; the report says which.
func TestDBBuildOfARelease(t *testing.T) {
	d := &DB{Version: "2.10.22"}
	s, err := d.build()
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.(interface{ FileName() string }); !ok || r.FileName() != "nats-server-2.10.22" || d.buildVersion() != "2.10.22" {
		t.Errorf("build %+v, version %s", s, d.buildVersion())
	}
	d = &DB{Version: VersionModule}
	if s, _ := d.build(); s == nil || d.buildVersion() != ServerVersion {
		t.Errorf("the series build: %v, %s", s, d.buildVersion())
	}
}
