package lossyfs

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// A cut is a power cut as the layer takes it, in two steps:
//
//  1. the freeze, the moment the power goes: from it no file operation
//     that could change what is on the disk below (a write, a sync, a
//     truncate, a create, a rename, an unlink …) completes; each waits,
//     and every process holding a file under the mount is SIGKILLed. A
//     server stopped there never hears back from the disk, as after a
//     real cut, so it acknowledges nothing it did not sync before.
//  2. the drop (Layer.Cut): the waiting operations are answered with EIO
//     (their processes are dead by then: none sees it), the layer waits
//     until no process holds a file under the mount, forgets what was not
//     synced, with what Torn keeps of it, and serves again.
//
// The freeze comes on command, at an instant (At: every node's layer
// armed with the same instant cuts at once, the host's clock being every
// container's), or at a sync the layer sees (Sync): before or after the
// Nth sync of a file whose name matches a pattern, as lazyfs's clear
// injection with timing, op and occurrence. After: the sync reached the
// disk below, and its caller never hears that it did.

// Options are what a layer does beyond its default, chosen when it is
// mounted.
type Options struct {
	// KeepWrites: every file keeps its writes since its last sync, so a
	// cut may let some of them survive (Torn). It costs a copy of each
	// write.
	KeepWrites bool
	// LoseNames: a create, rename, unlink (…) not followed by an fsync
	// of a directory it touched is undone by a cut (names_linux.go). By
	// default directory changes are durable at once, as lazyfs's.
	LoseNames bool
}

// Trigger is when an armed layer freezes by itself.
type Trigger struct {
	// At: at this instant (zero: not by time).
	At time.Time
	// Sync is a glob (path.Match) matched against a synced file's path
	// under the mount and against its base name ("" : not by sync).
	Sync string
	// N: the Nth matching sync after the layer was armed (1 the first).
	N int
	// After: once that sync has reached the disk below; else before it.
	After bool
}

// String is the trigger as the arm command spells it.
func (t Trigger) String() string {
	if !t.At.IsZero() {
		return "at=" + strconv.FormatInt(t.At.UnixNano(), 10)
	}
	timing := "before"
	if t.After {
		timing = "after"
	}
	return fmt.Sprintf("sync=%s n=%d timing=%s", t.Sync, t.N, timing)
}

// ParseTrigger reads the arguments of an arm command: at=UNIXNANO, or
// sync=GLOB [n=N] [timing=before|after].
func ParseTrigger(args map[string]string) (Trigger, error) {
	var t Trigger
	if at, ok := args["at"]; ok {
		ns, err := strconv.ParseInt(at, 10, 64)
		if err != nil || ns <= 0 {
			return t, fmt.Errorf("at=%q is no instant (nanoseconds since 1970)", at)
		}
		t.At = time.Unix(0, ns)
		return t, nil
	}
	glob, ok := args["sync"]
	if !ok || glob == "" {
		return t, fmt.Errorf("arm needs at=UNIXNANO or sync=GLOB")
	}
	if _, err := path.Match(glob, ""); err != nil {
		return t, fmt.Errorf("sync=%q is no glob: %v", glob, err)
	}
	t.Sync, t.N = glob, 1
	if n, ok := args["n"]; ok {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return t, fmt.Errorf("n=%q is no count of syncs (1 or more)", n)
		}
		t.N = v
	}
	switch args["timing"] {
	case "", "before":
	case "after":
		t.After = true
	default:
		return t, fmt.Errorf("timing=%q: before or after", args["timing"])
	}
	return t, nil
}

// Matches reports whether a sync of the file at rel (its path under the
// mount) counts for the trigger.
func (t Trigger) Matches(rel string) bool {
	if t.Sync == "" {
		return false
	}
	if ok, _ := path.Match(t.Sync, rel); ok {
		return true
	}
	ok, _ := path.Match(t.Sync, path.Base(rel))
	return ok
}

// Freeze is a freeze as it happened: when, why, and the processes it
// killed.
type Freeze struct {
	At     time.Time `json:"-"`
	AtNano int64     `json:"at_unix_nano"`
	Why    string    `json:"why"`
	Killed []int     `json:"killed,omitempty"`
}

// parseArgs reads a command line's words after the first: key=value each.
func parseArgs(words []string) (map[string]string, error) {
	args := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", w)
		}
		args[k] = v
	}
	return args, nil
}
