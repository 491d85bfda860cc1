// Package buildlock makes the fencecheck processes of one machine build
// each cached thing once: the node image, a server compile, an agent
// program, a client image. Whoever holds a build's lock builds it; every
// other process that needs it waits, says in one line what it waits for
// and who holds it, then finds it cached.
//
// It exists for CI: scripts/test starts `check image build --all` and the
// tests at the same moment, so a test that needs etcd 3.5 waits for the
// one compile already under way instead of starting a second beside it,
// and a test that needs nothing built runs at once. It also keeps the
// time this process spent on builds, waiting on other processes' or
// making its own (Waited), so that a test's time budget does not count a
// build: a build is the machine's set-up, not the test.
//
// It only serialises: it never decides what is built or where it is
// kept, and a lock is advisory (flock): a process that dies lets go of
// it, so a crashed build never blocks the next.
package buildlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// poll is how often a waiting process tries the lock again. A build takes
// seconds to minutes; half a second is nothing beside it and keeps the
// wait cancellable (a blocking flock is not).
const poll = 500 * time.Millisecond

// waits is the time this process has spent in Acquire while another
// process held the lock: done, the waits that ended, and the start of
// each wait under way.
var waits struct {
	sync.Mutex
	done    time.Duration
	ongoing map[*time.Time]bool
}

// Waited is the time this process has spent so far on builds: waiting
// for those held by other processes, and making its own while it held
// their lock, the spans under way included. A caller measures a span by
// reading it twice.
func Waited() time.Duration {
	waits.Lock()
	defer waits.Unlock()
	d := waits.done
	for start := range waits.ongoing {
		d += time.Since(*start)
	}
	return d
}

// startWait counts a wait from now on; the function it returns ends it.
func startWait() (end func() time.Duration) {
	start := time.Now()
	waits.Lock()
	if waits.ongoing == nil {
		waits.ongoing = map[*time.Time]bool{}
	}
	waits.ongoing[&start] = true
	waits.Unlock()
	return func() time.Duration {
		waits.Lock()
		defer waits.Unlock()
		delete(waits.ongoing, &start)
		took := time.Since(start)
		waits.done += took
		return took
	}
}

// Dir is where the lock files live: fencecheck's directory in the user's
// cache, beside what the builds keep.
func Dir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "fencecheck", "locks"), nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Acquire takes the machine-wide lock named name (a cache entry's name:
// "etcd-3.5-linux-amd64", "node-image-<tag>"), waiting while another
// process holds it. Before it waits it writes one line to progress saying
// what (a phrase: "etcd 3.5's compile") it waits for and which process
// holds the lock, and one when it has it. It returns the function that
// lets go; the caller looks at its cache again once it holds the lock,
// since the holder it waited for has usually just filled it.
//
// Where the lock cannot be had at all (no cache directory, a file system
// without locks), it returns a no-op release and no error: builds then
// behave as they did before this package, each process on its own.
func Acquire(ctx context.Context, name, what string, progress io.Writer) (release func(), err error) {
	dir, err := Dir()
	if err != nil {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}, nil
	}
	path := filepath.Join(dir, unsafeName.ReplaceAllString(name, "_")+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return func() {}, nil
	}
	ok, err := tryLock(f)
	if errors.Is(err, errUnsupported) {
		f.Close()
		return func() {}, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !ok {
		end := startWait()
		if progress != nil {
			fmt.Fprintf(progress, "waiting for %s: %s is building it (lock %s)\n", what, holder(path), path)
		}
		t := time.NewTicker(poll)
		defer t.Stop()
		for !ok {
			select {
			case <-ctx.Done():
				end()
				f.Close()
				return nil, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
			case <-t.C:
			}
			if ok, err = tryLock(f); err != nil {
				end()
				f.Close()
				return nil, fmt.Errorf("locking %s: %w", path, err)
			}
		}
		took := end()
		if progress != nil {
			fmt.Fprintf(progress, "waited %s for %s\n", took.Round(100*time.Millisecond), what)
		}
	}
	// Who holds it, for the next process's waiting line.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(self()+"\n"), 0)
	}
	// The build made while holding the lock is no more the caller's own
	// time than a wait for another's: a test that happens to be first to
	// need a server does CI's image build's work (Waited counts both).
	endHold := startWait()
	var once sync.Once
	return func() { once.Do(func() { endHold(); unlock(f); f.Close() }) }, nil
}

// self names this process for another's waiting line: its pid and
// command.
func self() string {
	args := os.Args
	if len(args) > 4 {
		args = append(args[:4:4], "…")
	}
	name := filepath.Base(args[0])
	return fmt.Sprintf("process %d (%s)", os.Getpid(), strings.TrimSpace(name+" "+strings.Join(args[1:], " ")))
}

// holder reads who holds the lock at path, as the holder wrote it.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return s
	}
	return "another process"
}
