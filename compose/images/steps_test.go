package images

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock moves only when told, so a step's elapsed time is known.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func quietOutput(t *testing.T) (*BuildOutput, *bytes.Buffer, *fakeClock) {
	t.Helper()
	var buf bytes.Buffer
	o := NewBuildOutput(&buf, BuildOutputOptions{LogDir: t.TempDir()})
	clock := &fakeClock{t: time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)}
	o.now = clock.now
	return o, &buf, clock
}

// Quiet: the tools' lines go to the log only; the writer gets the log's
// path, then one line per step with its elapsed time.
func TestBuildOutputQuietPrintsOneLinePerStep(t *testing.T) {
	o, buf, clock := quietOutput(t)
	base := o.Begin("base image")
	etcd := o.Begin("etcd 3.6 compile")
	for i := range 500 {
		fmt.Fprintf(base, "I: Retrieving package %d\n", i)
		fmt.Fprintf(etcd, "go: downloading module %d\n", i)
	}
	clock.advance(45 * time.Second)
	base.Done("")
	clock.advance(11 * time.Second)
	etcd.Done("31 MB")
	o.Linef("built it")
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("printed %d lines, want 4 (log path, two steps, the end):\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], o.LogPath()) || o.LogPath() == "" {
		t.Errorf("first line %q does not name the log %q", lines[0], o.LogPath())
	}
	if !strings.Contains(lines[1], "base image") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "45s") {
		t.Errorf("base image line = %q, want its name and 45s", lines[1])
	}
	if !strings.Contains(lines[2], "etcd 3.6 compile") || !strings.Contains(lines[2], "56s  31 MB") {
		t.Errorf("etcd line = %q, want its name, 56s and its detail", lines[2])
	}
	if strings.Contains(buf.String(), "Retrieving") || strings.Contains(buf.String(), "downloading") {
		t.Errorf("a tool's line reached the writer:\n%s", buf.String())
	}

	log, err := os.ReadFile(o.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[base image] I: Retrieving package 0\n", "[base image] I: Retrieving package 499\n",
		"[etcd 3.6 compile] go: downloading module 499\n", "built it\n"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("the log lacks %q", want)
		}
	}
}

// A failed step names itself and shows its own last lines (not another
// step's), and where the whole log is; its error names the step.
func TestBuildOutputFailureShowsTheStepsTail(t *testing.T) {
	o, buf, clock := quietOutput(t)
	other := o.Begin("etcd 3.6 compile")
	pkgs := o.Begin("Debian packages")
	for i := range 50 {
		fmt.Fprintf(pkgs, "apt line %d\n", i)
		fmt.Fprintf(other, "go line %d\n", i)
	}
	fmt.Fprint(pkgs, "E: Unable to locate package etcd-server") // no newline: still shown
	clock.advance(32 * time.Second)
	err := pkgs.Fail(errors.New("The command '/bin/sh -c apt-get install' returned a non-zero code: 100"), false)
	other.Done("")
	o.Close()

	if err == nil || !strings.HasPrefix(err.Error(), "Debian packages: ") {
		t.Errorf("error = %v, want it to name the step", err)
	}
	out := buf.String()
	for _, want := range []string{"Debian packages", "32s  FAILED: The command", `step "Debian packages" failed; its last 20 lines (all of it: ` + o.LogPath() + `)`,
		"| apt line 31\n", "| apt line 49\n", "| E: Unable to locate package etcd-server"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"apt line 30\n", "go line"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("output has %q, beyond the failing step's last 20 lines:\n%s", unwanted, out)
		}
	}
}

// An interrupted step says so in one line, with no tail.
func TestBuildOutputInterruptedStepPrintsOneLine(t *testing.T) {
	o, buf, _ := quietOutput(t)
	s := o.Begin("base image")
	fmt.Fprintln(s, "I: Extracting libc6...")
	s.Fail(errors.New("context canceled"), true)
	o.Close()
	if got := strings.Count(buf.String(), "\n"); got != 2 || !strings.Contains(buf.String(), "interrupted") || strings.Contains(buf.String(), "Extracting") {
		t.Errorf("interrupted step printed:\n%s", buf.String())
	}
}

// Verbose: the stream comes through, every line whole even when two steps
// write side by side in pieces that end mid-line.
func TestBuildOutputVerboseKeepsLinesWhole(t *testing.T) {
	var buf bytes.Buffer
	o := NewBuildOutput(&buf, BuildOutputOptions{Verbose: true})
	var wg sync.WaitGroup
	for step := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := o.Begin(fmt.Sprintf("step %d", step))
			for i := range 200 {
				fmt.Fprintf(s, "step %d ", step)
				fmt.Fprintf(s, "line %d\n", i)
			}
			fmt.Fprintf(s, "step %d unfinished", step)
			s.Done("")
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		var step, i int
		switch {
		case strings.HasPrefix(line, "compose: step ") || strings.HasPrefix(line, "  step "):
			continue // a step's start and end
		case strings.HasSuffix(line, "unfinished"):
		default:
			if n, err := fmt.Sscanf(line, "step %d line %d", &step, &i); n != 2 || err != nil {
				t.Fatalf("a cut line: %q", line)
			}
		}
		seen[line] = true
	}
	if len(seen) != 402 {
		t.Errorf("%d distinct lines, want 402", len(seen))
	}
}

// A writer that is not a BuildOutput gets the whole stream, as before.
func TestBuildOutputOfPlainWriterStreams(t *testing.T) {
	var buf bytes.Buffer
	s := buildOutputOf(&buf).Begin("etcd 3.5 compile")
	fmt.Fprintln(s, "go: downloading go.etcd.io/etcd/server/v3 v3.5.23")
	s.Done("")
	if !strings.Contains(buf.String(), "go: downloading") {
		t.Errorf("plain writer got:\n%s", buf.String())
	}
	if o := buildOutputOf(nil); o.verbose {
		t.Error("a nil progress writer streams")
	}
}

func TestFailureTailWithoutOutput(t *testing.T) {
	got := failureTail("base image", nil, 20, "")
	if got != `step "base image" failed before printing anything` {
		t.Errorf("failureTail = %q", got)
	}
}

func TestFormatElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{
		400 * time.Millisecond: "0.4s", 9940 * time.Millisecond: "9.9s", 12 * time.Second: "12s",
		65 * time.Second: "1m05s", 128*time.Second + 600*time.Millisecond: "2m09s",
	} {
		if got := formatElapsed(d); got != want {
			t.Errorf("formatElapsed(%s) = %q, want %q", d, got, want)
		}
	}
}

// The daemon's colour codes around a step's stderr do not reach the log
// or the tail.
func TestBuildOutputDropsColourCodes(t *testing.T) {
	o, buf, _ := quietOutput(t)
	s := o.Begin("servers")
	fmt.Fprint(s, "\x1b[0m\x1b[91m+ apt-get clean\n")
	s.Fail(errors.New("exit 1"), false)
	o.Close()
	log, _ := os.ReadFile(o.LogPath())
	if strings.Contains(buf.String()+string(log), "\x1b") || !strings.Contains(buf.String(), "| + apt-get clean") {
		t.Errorf("printed %q, logged %q", buf.String(), log)
	}
}

// A writer that is not a terminal has no live line: while a step runs it
// hears from it every heartbeat, and never about a step that has ended.
func TestBuildOutputHeartbeatOnAPlainWriter(t *testing.T) {
	var buf syncBuffer
	o := NewBuildOutput(&buf, BuildOutputOptions{LogDir: t.TempDir()})
	o.heartbeat = 20 * time.Millisecond
	s := o.Begin("kube-apiserver v1.34.4 compile")
	fmt.Fprintln(s, "go: downloading k8s.io/api v0.34.4")
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(buf.String(), "still running") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	s.Done("146 MB")
	o.Close()
	out := buf.String()
	if strings.Count(out, "  … still running: kube-apiserver v1.34.4 compile") < 2 {
		t.Fatalf("no heartbeat naming the step:\n%s", out)
	}
	if !strings.Contains(out, ": go: downloading k8s.io/api v0.34.4") {
		t.Errorf("the heartbeat does not carry the step's last line:\n%s", out)
	}
	after := len(out)
	time.Sleep(100 * time.Millisecond)
	if tail := buf.String()[after:]; tail != "" {
		t.Errorf("lines after the step ended: %q", tail)
	}
}

// Record gets every line the writer gets (for a run's check.log).
func TestBuildOutputRecordsItsLines(t *testing.T) {
	var buf bytes.Buffer
	var recorded []string
	o := NewBuildOutput(&buf, BuildOutputOptions{LogDir: t.TempDir(), Record: func(l string) { recorded = append(recorded, l) }})
	s := o.Begin("etcd 3.5 compile")
	s.Done("30 MB")
	o.Linef("all built")
	o.Close()
	printed := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if strings.Join(recorded, "\n") != strings.Join(printed, "\n") || len(recorded) != 3 {
		t.Errorf("recorded %q, printed %q: want the same 3 lines", recorded, printed)
	}
}

// syncBuffer is a bytes.Buffer safe for a heartbeat goroutine and a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
