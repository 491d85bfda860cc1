package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
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
