package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/units"
)

// memFlag is --check-memory: a size such as 8GiB.
type memFlag struct{ v *int64 }

func (f memFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return ""
	}
	return units.FormatBytes(*f.v)
}

func (f memFlag) Set(s string) error {
	n, err := units.ParseBytes(s)
	if err != nil {
		return err
	}
	if n < harness.MinCheckMemory {
		return fmt.Errorf("%s is too small (accepted: at least %s, e.g. 4GiB)", s, units.FormatBytes(harness.MinCheckMemory))
	}
	*f.v = n
	return nil
}

func (f memFlag) Type() string { return "size" }

// addCheckMemoryFlag adds --check-memory, defaulting to half the machine.
func addCheckMemoryFlag(fs *pflag.FlagSet, v *int64) {
	*v = harness.DefaultCheckMemory()
	fs.Var(memFlag{v}, "check-memory", fmt.Sprintf("bound on the check's memory (e.g. 8GiB); past it the verdict is unknown (default: half of this machine's memory, here %s)", units.FormatBytes(*v)))
	// The usage says the default and where it comes from; pflag would add
	// it a second time.
	fs.Lookup("check-memory").DefValue = ""
}
