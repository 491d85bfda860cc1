package compare

import (
	"cmp"
	"fmt"
	"maps"
	"strings"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// The known-bugs preset's rows: for each published bug a backend lists
// (registry.Info.KnownBugs), a row on the release that had it and a row
// on the release that fixed it, with the same workload and fault. A row's
// settings name the bug and the side ("etcd 14370, broken") and carry the
// flags both sides run with, so the tables and an --expect file name each
// row apart (docs/known-bugs.md). The bugs come from the backends; this
// file names none.

// Sides of a known bug, as its rows' settings name them.
const (
	BugBroken = "broken"
	BugFixed  = "fixed"
)

// knownBugBackends are the backends that list published bugs.
func knownBugBackends() []string {
	var out []string
	for _, be := range registry.All() {
		if len(be.KnownBugs) > 0 {
			out = append(out, be.Name)
		}
	}
	return out
}

// knownBugRows adds be's known bugs' rows, broken then fixed, in the
// order the backend lists its bugs.
func knownBugRows(be registry.Info, add func(Row)) error {
	if len(be.KnownBugs) == 0 {
		return usage.Errorf("backends", "backend %s lists no published bug to reproduce (backends that do: %s)", be.Name, strings.Join(knownBugBackends(), ", "))
	}
	cluster := defaultCluster(be)
	for _, b := range be.KnownBugs {
		for _, side := range []struct {
			name string
			bs   registry.BugSide
		}{{BugBroken, b.Broken}, {BugFixed, b.Fixed}} {
			opts := maps.Clone(b.Options)
			if opts == nil {
				opts = map[string]string{}
			}
			maps.Copy(opts, side.bs.Options)
			r := Row{Backend: be.Name, Recipe: b.Recipe, Storage: cmp.Or(b.Storage, registry.DefaultStorage), Fencing: cmp.Or(b.Fencing, "all"),
				Cluster: cluster, LeaseCheck: b.LeaseCheck, ServerVersion: side.bs.Version, Faults: b.Fault,
				FaultsWhy: fmt.Sprintf("%s is reproduced under %s", b.Name, b.Fault),
				Nodes:     b.Nodes, Clients: b.Clients, NemesisInterval: b.NemesisInterval, TimeLimit: b.TimeLimit}
			if !registry.IsSharedStorage(r.Storage) {
				r.Fencing = "none" // the backend guards its own storage itself
			}
			if r.LeaseCheck == registry.LeaseCheckAll {
				r.LeaseCheck = ""
			}
			add(r.withSettings(registry.Settings{Name: b.Name + ", " + side.name, Options: opts, What: b.Broke}))
		}
	}
	return nil
}

// KnownBugSide says which side of a known bug a row is (BugBroken,
// BugFixed) and the bug's name; ok is false for a row of any other
// preset.
func (r Row) KnownBugSide() (bug, side string, ok bool) {
	name, s, found := strings.Cut(r.Settings, ", ")
	if !found || (s != BugBroken && s != BugFixed) {
		return "", "", false
	}
	return name, s, true
}
