package usage

import (
	"errors"
	"slices"
	"testing"
)

func owned() Owners {
	number := func(v string) error {
		if v != "" && v != "1" && v != "2" {
			return errors.New("not 1 or 2")
		}
		return nil
	}
	return Owners{Chooser: "backend", List: []Owner{
		{Name: "a", Flags: []Flag{{Name: "zeta", Check: number}, {Name: "shared", Check: number}}},
		{Name: "b", Flags: []Flag{{Name: "shared", Check: number}}},
		{Name: "c"},
	}}
}

// The flags are listed once each, by name, and each names its owners.
func TestOwnersListFlagsOnceAndNameTheirOwners(t *testing.T) {
	o := owned()
	var names []string
	for _, f := range o.Flags() {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"shared", "zeta"}) {
		t.Errorf("flags %v, want shared, zeta", names)
	}
	if got := o.Of("shared"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("owners of shared %v, want a, b", got)
	}
	if got := o.Of("nobody"); got != nil {
		t.Errorf("owners of an unknown flag %v", got)
	}
}

// A flag given without a chosen owner is refused naming its owners; a
// flag no owner has passes unless Unowned says why not; a chosen owner's
// flags check their values; a flag left out ("") is never refused.
func TestCheckRefusesAFlagWithoutItsOwner(t *testing.T) {
	o := owned()
	var ue *Error
	if err := o.Check([]string{"b"}, map[string]string{"zeta": "1"}); !errors.As(err, &ue) || ue.Flag != "zeta" || ue.Msg != "applies to --backend a only" {
		t.Errorf("zeta without a: %v", err)
	}
	if err := o.Check([]string{"c"}, map[string]string{"zeta": "", "other": "x"}); err != nil {
		t.Errorf("a flag left out and another kind's flag: %v", err)
	}
	o.Unowned = "no backend has this flag"
	if err := o.Check([]string{"c"}, map[string]string{"other": "x"}); !errors.As(err, &ue) || ue.Error() != "--other: no backend has this flag" {
		t.Errorf("an unowned flag, Unowned set: %v", err)
	}
	if err := o.Check([]string{"b"}, map[string]string{"shared": "3"}); !errors.As(err, &ue) || ue.Error() != "--shared: not 1 or 2" {
		t.Errorf("a bad value: %v", err)
	}
	if err := o.Check([]string{"a"}, map[string]string{"shared": "2", "zeta": "1"}); err != nil {
		t.Errorf("good values: %v", err)
	}
}
