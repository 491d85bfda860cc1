// Package dockertest is the one place that decides whether a Docker
// integration test runs, and builds the static binaries such tests put in
// their containers. The rule, the same in every package: under -short a
// Docker test is skipped (they are never short), and a Docker engine that
// does not answer skips the test — except under CI=true, which wins over
// both: -short is ignored and a missing engine fails the test, because a
// CI run must never pass by skipping its Docker tests.
//
// It also holds what the Docker tests of several packages share: a fresh
// test id (TestID), a build's output in the test log (LogWriter) and the
// node image, built once per test process (NodeImage).
//
// It also starts a private sshd (SSHEngine) through which a test reaches
// this machine's engine as a remote one, at ssh://root@127.0.0.1:PORT.
//
// Every Docker test has a time budget, all of them in one table
// (Budgets, budgets.go), watched while the test runs (budget.go): CI's
// time is the project's scarcest resource, so a test that grows past its
// budget fails with its name, its time and its budget, and a hung one is
// ended minutes after its budget rather than at the package's timeout.
//
// It is test support: only _test.go files import it. It must never start
// containers or clusters itself, nor hold anything a run depends on.
package dockertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/lines"
)

// CI reports whether the tests run under CI=true, where a missing
// prerequisite is a failure instead of a skip.
func CI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends a test whose prerequisite (what) is missing: a skip,
// or under CI=true a failure. It does not return.
func Unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if CI() {
		t.Fatalf("%s is required under CI=true: %v", what, err)
	}
	t.Skipf("%s is unavailable: %v", what, err)
}

// Engine connects to the Docker engine with connect (engine.Connect) and
// closes the connection when the test ends; see the package comment for
// when it skips or fails instead. connect is passed in so that compose's
// own packages can use this one.
func Engine[C io.Closer](t testing.TB, connect func(context.Context) (C, error)) C {
	t.Helper()
	if testing.Short() && !CI() {
		t.Skip("-short: Docker tests are not short")
	}
	watchBudget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cli, err := connect(ctx)
	if err != nil {
		Unavailable(t, "Docker", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// The binaries built by this test process, once each, in one directory.
var (
	buildMu sync.Mutex
	dir     string
	built   = map[string]result{}
)

type result struct {
	path string
	err  error
}

// CheckBinary is the static check binary the containers run.
func CheckBinary(t testing.TB) string {
	t.Helper()
	return Binary(t, "github.com/fencecheck/fencecheck/cmd/check")
}

// Binary builds the main package pkg (an import path) as a static binary
// (CGO_ENABLED=0) once per test process and returns its path; a build
// that fails fails every test that needs it. RemoveBinaries deletes them.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	r, ok := built[pkg]
	if !ok {
		r = build(pkg)
		built[pkg] = r
	}
	if r.err != nil {
		t.Fatalf("building %s: %v", pkg, r.err)
	}
	return r.path
}

func build(pkg string) result {
	if dir == "" {
		d, err := os.MkdirTemp("", "fencecheck-test-bin-")
		if err != nil {
			return result{err: err}
		}
		dir = d
	}
	out := filepath.Join(dir, path.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return result{err: fmt.Errorf("go build: %v\n%s", err, b)}
	}
	return result{path: out}
}

// RemoveBinaries deletes what Binary built, for a TestMain to call after
// m.Run.
func RemoveBinaries() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	dir, built = "", map[string]result{}
}

// TestID is a fresh test id, "it-" and 8 random hex digits, for the
// containers and networks of one test.
func TestID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "it-" + hex.EncodeToString(b)
}

// LogWriter sends complete lines to t.Log, so that `go test -v` shows a
// long build as it goes.
func LogWriter(t testing.TB) io.Writer { return &logWriter{t: t} }

type logWriter struct {
	t     testing.TB
	mu    sync.Mutex
	lines lines.Splitter
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines.Write(p, func(line string) error {
		w.t.Log(line)
		return nil
	})
	return len(p), nil
}

// The node image, built once per test process.
var nodeImage struct {
	once sync.Once
	tag  string
	err  error
}

// NodeImage returns the node image's tag, made on the engine cli by
// ensure (images.EnsureImage, passed in so that compose's own packages can
// use this one) the first time a test of this process asks, with 25
// minutes for a first build; a build that failed fails every test that
// asks.
func NodeImage[C any](t testing.TB, cli C, ensure func(context.Context, C, io.Writer) (string, error)) string {
	t.Helper()
	nodeImage.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
		defer cancel()
		start := time.Now()
		// The first test of a process pays for the image (minutes on a
		// fresh machine): that is not the test's own time.
		OutsideBudget(t, func() {
			nodeImage.tag, nodeImage.err = ensure(ctx, cli, LogWriter(t))
		})
		t.Logf("EnsureImage: %s in %s", nodeImage.tag, time.Since(start).Round(time.Millisecond))
	})
	if nodeImage.err != nil {
		t.Fatalf("node image: %v", nodeImage.err)
	}
	return nodeImage.tag
}
