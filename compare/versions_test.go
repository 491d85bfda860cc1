package compare

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/usage"
)

// --server-versions makes one row per listed build of a backend that has
// several, and leaves a backend with one build its one row.
func TestExpandServerVersionsRowPerVersion(t *testing.T) {
	m, err := Expand(Spec{Backends: []string{"etcd:lock-rpc", "zookeeper"}, Fencing: []string{"none"}, ServerVersions: []string{"3.4", "3.5", "3.6", "3.7"}})
	if err != nil {
		t.Fatal(err)
	}
	var etcd []string
	zk := 0
	for _, r := range m.Rows {
		switch r.Backend {
		case "etcd":
			etcd = append(etcd, r.ServerVersion)
			cfg := m.Config(r, "pause-leader", 0, "x")
			if cfg.ServerVersion != r.ServerVersion {
				t.Errorf("row %s runs server version %q", r, cfg.ServerVersion)
			}
			if !strings.HasPrefix(r.String(), "etcd "+r.ServerVersion+" lock-rpc") {
				t.Errorf("row reads %q", r.String())
			}
		case "zookeeper":
			zk++
			if r.ServerVersion != "" || m.Config(r, "pause-leader", 0, "x").ServerVersion != "" {
				t.Errorf("zookeeper row %+v takes a server version", r)
			}
		}
	}
	if strings.Join(etcd, ",") != "3.4,3.5,3.6,3.7" || zk != 1 {
		t.Errorf("etcd rows %v, zookeeper rows %d", etcd, zk)
	}
}

func TestExpandServerVersionsRefusals(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Backends: []string{"etcd"}, ServerVersions: []string{"3.3"}}, `backend etcd has no server version "3.3" (accepted: 3.6, 3.4, 3.5, 3.7, or an exact etcd release`},
		{Spec{Backends: []string{"etcd"}, ServerVersions: []string{"3.5", "3.5"}}, "3.5 is listed twice"},
		{Spec{Backends: []string{"zookeeper", "redis"}, ServerVersions: []string{"3.5"}}, "no backend of the matrix has several server builds"},
	} {
		_, err := Expand(tc.spec)
		var ue *usage.Error
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.spec.ServerVersions, err, tc.want)
			continue
		}
		if !errors.As(err, &ue) || ue.Flag != "server-versions" {
			t.Errorf("%v: error %v does not name --server-versions", tc.spec.ServerVersions, err)
		}
	}
}

// An exact release is a row of its own, beside a named build; one
// that is not a release is refused with what is taken.
func TestExpandServerVersionsTakesExactReleases(t *testing.T) {
	m, err := Expand(Spec{Backends: []string{"etcd:mutex"}, Fencing: []string{"none"}, ServerVersions: []string{"3.5.4", "3.5"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Rows {
		got = append(got, r.ServerVersion)
	}
	if strings.Join(got, ",") != "3.5.4,3.5" {
		t.Errorf("rows %v, want 3.5.4 and 3.5", got)
	}
	_, err = Expand(Spec{Backends: []string{"etcd"}, ServerVersions: []string{"3.4.23"}})
	if err == nil || !strings.Contains(err.Error(), "or an exact etcd release from 3.5.0 on") {
		t.Errorf("3.4.23: %v", err)
	}
}
