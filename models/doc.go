// Package models decides a history. It holds the model, the checker, and
// beside them, each in files of its own, the damage and the cause that
// come with a verdict:
//
//   - the model: fenced storage, a register that admits only the newest
//     lease's writes, as a porcupine Model (fenced.go);
//   - the checker: Check, one pass over each key that streams (stream.go,
//     jit.go, jitstate.go, jitcompact.go), and CheckWhole, porcupine's full
//     search that cross-checks it (check.go, which also holds Verdict and
//     Result);
//   - the damage: how many acknowledged updates a run lost (ComputeDamage,
//     damage.go), its answer to "how unsafe";
//   - the cause: the stale write that caused a violation, put first
//     (StaleWriteFirst, cause.go), and the sentence that tells it from
//     porcupine's partial linearization (Explain, explain.go);
//   - what the verdict is worth: what each client believed it held
//     (beliefs.go) and the moments safety was at stake and how each ended
//     (exposure.go, exposurereason.go);
//   - the grants the lock service acknowledged and later contradicted (a
//     token granted twice, a token going down), and the crash that lost
//     them, told in the verdict's sentence (contradiction.go).
//
// models/verdict settles a run's verdict from what the checker found and
// how the run went; it is the one place that decides it.
//
// It reads ops and returns results: no I/O but the io.Reader it is handed,
// no knowledge of any backend, and it never touches the process. A check's
// bounds on time and memory, which set Go's memory limit and watch the
// heap, are internal/bound's; the clock is read only to say how long a
// check took.
package models
