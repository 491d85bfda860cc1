package compare

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
)

func TestKnownBugsPresetPairsEachBugsBrokenAndFixedRelease(t *testing.T) {
	m, err := Expand(Spec{Preset: KnownBugs})
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs != 3 || !m.Base.GrantAfterEachCrash {
		t.Fatalf("runs %d, grant after each crash %v: want 3 runs held to a grant after each crash", m.Runs, m.Base.GrantAfterEachCrash)
	}
	bugs := 0
	for _, be := range registry.All() {
		for _, b := range be.KnownBugs {
			bugs++
			var sides []string
			for _, r := range m.Rows {
				name, side, ok := r.KnownBugSide()
				if !ok || name != b.Name {
					continue
				}
				sides = append(sides, side)
				if r.Faults != b.Fault || !slices.Contains(m.Faults, b.Fault) {
					t.Errorf("%s: row %s runs under %q, want %q, a column of %v", b.Name, r, r.Faults, b.Fault, m.Faults)
				}
				want := b.Broken
				if side == BugFixed {
					want = b.Fixed
				}
				if r.ServerVersion != want.Version {
					t.Errorf("%s %s: version %q, want %q", b.Name, side, r.ServerVersion, want.Version)
				}
				cfg := m.Config(r, b.Fault, 0, "x")
				for f, v := range b.Options {
					if cfg.Options[f] != v {
						t.Errorf("%s %s: --%s %q, want %q", b.Name, side, f, cfg.Options[f], v)
					}
				}
				for f, v := range want.Options {
					if cfg.Options[f] != v {
						t.Errorf("%s %s: --%s %q, want %q", b.Name, side, f, cfg.Options[f], v)
					}
				}
				if b.Nodes != 0 && cfg.Nodes != b.Nodes || b.Clients != 0 && cfg.Clients != b.Clients || b.TimeLimit != 0 && cfg.TimeLimit != b.TimeLimit {
					t.Errorf("%s %s: nodes %d clients %d time limit %s, want the bug's own", b.Name, side, cfg.Nodes, cfg.Clients, cfg.TimeLimit)
				}
				for _, f := range m.Faults {
					if why := m.Applicable(r, f); (why == "") != (f == b.Fault) {
						t.Errorf("%s %s under %s: applicable %q", b.Name, side, f, why)
					}
				}
			}
			if strings.Join(sides, ",") != "broken,fixed" {
				t.Errorf("%s: sides %v, want broken then fixed", b.Name, sides)
			}
		}
	}
	if bugs == 0 || len(m.Rows) != 2*bugs {
		t.Fatalf("%d rows for %d bugs", len(m.Rows), bugs)
	}
	// An --expect file names a bug's rows apart.
	var rows []string
	for _, r := range m.Rows {
		rows = append(rows, r.String())
	}
	if i := slices.IndexFunc(rows, func(s string) bool { return strings.Contains(s, "[etcd 14370, broken: ") }); i < 0 || !strings.HasPrefix(rows[i], "etcd 3.5.4 mutex etcd none") {
		t.Errorf("rows %q: want etcd 3.5.4's 14370 row named by its bug and side", rows)
	}
}

func TestKnownBugsPresetRefusesABackendWithoutBugs(t *testing.T) {
	_, err := Expand(Spec{Preset: KnownBugs, Backends: []string{"postgres"}})
	if err == nil || !strings.Contains(err.Error(), "backend postgres lists no published bug") {
		t.Fatalf("err %v", err)
	}
}

func TestKnownBugsTimeLimitGivenHoldsOverARowsOwn(t *testing.T) {
	m, err := Expand(Spec{Preset: KnownBugs, TimeLimit: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, r := range m.Rows {
		if r.TimeLimit != 0 {
			own++
		}
		if got := m.Config(r, r.Faults, 0, "x").TimeLimit; got != 7*time.Second {
			t.Errorf("%s: time limit %s, want --time-limit's 7s", r, got)
		}
	}
	if own == 0 {
		t.Fatal("no row has a time limit of its own: the test proves nothing")
	}
}

// docs/known-bugs.expect pins the preset's cells: every line must name a
// cell the preset has, so a renamed row fails here, not in a user's CI.
func TestKnownBugsExpectFileNamesThePresetsCells(t *testing.T) {
	exps, err := ReadExpectations("../docs/known-bugs.expect")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Expand(Spec{Preset: KnownBugs})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckExpectations(exps); err != nil {
		t.Fatal(err)
	}
}
