// Package models decides a history: the fenced-storage model it is checked
// against (fenced.go, a porcupine Model) and the checker built on it. The
// checker is Check, one pass over each key that streams (stream.go,
// jit*.go), and CheckWhole, porcupine's full search that cross-checks it
// (check.go); what it reports beside the verdict lives here too: the lost
// updates a run caused (damage.go), what each client believed it held
// (beliefs.go), the moments safety was at stake and how each ended
// (exposure.go, exposurereason.go: a valid verdict is worth only what it
// put at stake) and the stale write that caused a violation (cause.go,
// explain.go).
//
// It reads ops and returns results: no I/O but the io.Reader it is handed,
// no knowledge of any backend, and it never touches the process. A check's
// bounds on time and memory, which set Go's memory limit and watch the
// heap, are internal/bound's; the clock is read only to say how long a
// check took.
package models
