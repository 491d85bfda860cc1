package usage

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// Flag is a flag only some owners understand: a backend's own
// (--redis-persistence) or a fault's (--clock-offset). It is refused
// unless one of its owners is chosen.
type Flag struct {
	Name  string
	Usage string
	// Check validates a given value ("" is the flag not given, and must be
	// accepted); its error names what is accepted.
	Check func(value string) error
}

// Owner is one thing with flags of its own, by the word that chooses it:
// a backend's name, a fault's --nemesis word.
type Owner struct {
	Name  string
	Flags []Flag
}

// Owners are every owner of one kind (the backends, the faults), as their
// registry lists them.
type Owners struct {
	// Chooser is the flag that chooses among them, without its dashes
	// ("backend", "nemesis"), for the error about a flag given without
	// its owner.
	Chooser string
	// Unowned, when set, is the error's text for a given flag no owner
	// has; "" lets such a flag pass, as another kind of owner's.
	Unowned string
	List    []Owner
}

// Flags lists every owner's flags, sorted by name, each once.
func (o Owners) Flags() []Flag {
	seen := map[string]bool{}
	var out []Flag
	for _, ow := range o.List {
		for _, f := range ow.Flags {
			if !seen[f.Name] {
				seen[f.Name] = true
				out = append(out, f)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Of names the owners that understand flag, in the list's order.
func (o Owners) Of(flag string) []string {
	var out []string
	for _, ow := range o.List {
		if _, ok := Find(ow.Flags, flag); ok {
			out = append(out, ow.Name)
		}
	}
	return out
}

// Find finds the flag called name among flags.
func Find(flags []Flag, name string) (Flag, bool) {
	for _, f := range flags {
		if f.Name == name {
			return f, true
		}
	}
	return Flag{}, false
}

// Check refuses, in the order of their names, a flag given in options
// (by name; "" is not given) whose owners include none of chosen, and a
// given flag no owner has when Unowned says so; then it asks each chosen
// owner's flags, in the order chosen, to check their values. Every error is an *Error naming
// the flag.
func (o Owners) Check(chosen []string, options map[string]string) error {
	for _, flag := range slices.Sorted(maps.Keys(options)) {
		if options[flag] == "" {
			continue
		}
		owners := o.Of(flag)
		if len(owners) == 0 {
			if o.Unowned != "" {
				return Errorf(flag, "%s", o.Unowned)
			}
			continue
		}
		if !slices.ContainsFunc(owners, func(ow string) bool { return slices.Contains(chosen, ow) }) {
			return Errorf(flag, "applies to --%s %s only", o.Chooser, strings.Join(owners, ", "))
		}
	}
	for _, name := range chosen {
		i := slices.IndexFunc(o.List, func(ow Owner) bool { return ow.Name == name })
		if i < 0 {
			continue
		}
		for _, f := range o.List[i].Flags {
			if err := f.Check(options[f.Name]); err != nil {
				return Errorf(f.Name, "%v", err)
			}
		}
	}
	return nil
}
