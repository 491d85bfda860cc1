// Package usage is bad input on the command line, and the flags that only
// some parts of fencecheck understand.
//
// An *Error names the flag, what was wrong and what is accepted. Whoever
// finds bad input makes one — the harness validating a test, a backend
// refusing its own flag's value, a fault's flag check, compare expanding a
// matrix — and cmd/check exits 254 on it (harness.ExitUsage) wherever it
// came from, so it is one type in a package of its own that all of them
// import.
//
// Owners is the one way a backend or a fault declares flags of its own
// (--redis-persistence, --clock-offset): the CLI offers every owner's
// flags, and a flag given without a chosen owner is refused, naming the
// owners it applies to. Both registries (backends/registry, nemesis) keep
// their owners' flags through it.
//
// The package must never know a backend, a fault or a run, nor print or
// exit: it only phrases bad input and checks flags against their owners.
package usage

import "fmt"

// Error is bad input: it names the flag, what was wrong and what is
// accepted. The CLI exits 254 on it.
type Error struct {
	Flag string
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("--%s: %s", e.Flag, e.Msg) }

// Errorf makes an *Error about flag (named without its dashes).
func Errorf(flag, format string, args ...any) error {
	return &Error{Flag: flag, Msg: fmt.Sprintf(format, args...)}
}
