package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError turns the flag parser's errors into bad-argument errors. A
// value that does not parse is named with its flag, what the flag takes
// and an example, in place of the parser's own words ("strconv.ParseInt:
// parsing ...: invalid syntax").
func flagError(_ *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return usageErr("%v", err)
	}
	f, v := ive.GetFlag(), ive.GetValue()
	name := "--" + f.Name
	switch t := f.Value.Type(); {
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		if errors.Is(err, strconv.ErrRange) {
			return usageErr("%s: %s is too large (e.g. %s %s)", name, v, name, example(f, "42"))
		}
		return usageErr("%s: %q is not a whole number (e.g. %s %s)", name, v, name, example(f, "42"))
	case t == "duration":
		return usageErr("%s: %q is not a duration (e.g. %s %s)", name, v, name, example(f, "10s"))
	case t == "bool":
		return usageErr("%s: %q is not true or false (e.g. %s or %s=false)", name, v, name, name)
	case strings.HasPrefix(t, "float"):
		return usageErr("%s: %q is not a number (e.g. %s %s)", name, v, name, example(f, "1.5"))
	}
	return usageErr("%s: %q is not accepted: %v", name, v, errors.Unwrap(err))
}

// exampleAnnotation names a flag's own example value, where neither its
// default nor the type's fallback is one it accepts (--read-mix 0.5).
const exampleAnnotation = "fencecheck-example"

// example is the flag's own example, else its default when that is a
// telling one, else fallback.
func example(f *pflag.Flag, fallback string) string {
	if e := f.Annotations[exampleAnnotation]; len(e) > 0 {
		return e[0]
	}
	switch f.DefValue {
	case "", "0", "0s":
		return fallback
	}
	return f.DefValue
}
