package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Settings are a named choice of a backend's own flags (Info.Flags), as
// one row of `check compare` runs them: "safe" with
// --redis-persistence aof-always, "sentinel" with --redis-topology
// sentinel.
type Settings struct {
	// Name is what the tables call the choice.
	Name string
	// Options are the flags' values by flag name (Setup.Options); none
	// for the backend's defaults.
	Options map[string]string
	// What says in a few words what the choice means for the question
	// asked ("fsync every write before acknowledging it").
	What string
}

// Flags are the options as a command line gives them, sorted by flag:
// "--redis-persistence aof-always"; "" for none.
func (s Settings) Flags() string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(s.Options)) {
		parts = append(parts, "--"+f+" "+s.Options[f])
	}
	return strings.Join(parts, " ")
}

// Durability is how a backend describes its durability settings for a
// power cut: the recipe they are measured with, the power fault that
// suits its servers, and its settings, the safe one first, then the
// relaxed ones (each acknowledges what a power cut can take).
type Durability struct {
	// Recipe is the recipe the settings are measured with: one with a
	// fencing token, so that a token granted twice or going down shows.
	Recipe string
	// Fault is the power fault (a --nemesis word) that tests the
	// settings: a cut of one server where one server holds the state,
	// every server at once where a quorum would otherwise keep it.
	Fault string
	// Why says why that fault suits the servers.
	Why string
	// Safe is the setting that makes every acknowledged write durable;
	// Relaxed those that acknowledge before the disk has it.
	Safe    Settings
	Relaxed []Settings
}

// All is the safe settings, then the relaxed ones.
func (d Durability) All() []Settings { return append([]Settings{d.Safe}, d.Relaxed...) }

// Deployment is one way users deploy a lock service (one master, five
// independent masters, a master with replicas and Sentinels), as the
// backend's own flags choose it.
type Deployment struct {
	Settings
	// Recipes are the backend's recipes that run on this deployment.
	Recipes []string
	// Faults are the --nemesis words that have meaning here; Why says why
	// these and not the others.
	Faults []string
	Why    string
}

// CheckSettings checks that s names only flags of b and gives each a
// value its check accepts: a backend's description of itself is tested
// where it is made.
func (b Info) CheckSettings(s Settings) error {
	for f, v := range s.Options {
		found := false
		for _, fl := range b.Flags {
			if fl.Name != f {
				continue
			}
			found = true
			if fl.Check != nil {
				if err := fl.Check(v); err != nil {
					return fmt.Errorf("backend %s, settings %s: --%s %s: %v", b.Name, s.Name, f, v, err)
				}
			}
		}
		if !found {
			return fmt.Errorf("backend %s, settings %s: --%s is not one of its flags", b.Name, s.Name, f)
		}
	}
	return nil
}

// KnownBug is a published bug of the backend's servers that `check
// compare --preset known-bugs` reproduces: one row on the release that
// had it, one on the release that fixed it (or the setting that avoids
// it), with the same workload and fault, so that the pair shows the bug
// and its absence side by side (docs/known-bugs.md).
type KnownBug struct {
	// Name is the project and its issue: "etcd 14370".
	Name string
	// Broke says in a few words what the bug broke, as the lock sees it
	// ("an acknowledged write lost: a token handed out twice").
	Broke string
	// Recipe, Storage and Fencing are both rows'; an empty Storage is
	// the fenced node, an empty Fencing is all. LeaseCheck is the built-in
	// client's ("" for the careful one).
	Recipe, Storage, Fencing, LeaseCheck string
	// Nodes and Clients are both rows' server and client counts (0: the
	// matrix's); NemesisInterval and TimeLimit their faults' rest and
	// their runs' length (0: the matrix's), for a bug that needs a
	// service back up before the next fault.
	Nodes, Clients  int
	NemesisInterval time.Duration
	TimeLimit       time.Duration
	// Fault is the column both rows run under: a --nemesis word, or
	// words joined by + (one drawn per injection).
	Fault string
	// Options are flags both rows take, the backend's own and the
	// fault's, by flag name (failpoint: raftBeforeSave=panic).
	Options map[string]string
	// Broken and Fixed are the two rows.
	Broken, Fixed BugSide
}

// BugSide is one row of a known bug: the release, and the flags it adds
// to the bug's.
type BugSide struct {
	// Version is the row's --server-version ("" for the backend's
	// default build).
	Version string
	// Options are flags this row adds (a durability setting that avoids
	// the bug, where the fix is a setting, not a release).
	Options map[string]string
}
