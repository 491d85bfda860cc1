package agent

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/internal/dockertest"
	"github.com/fencecheck/fencecheck/lockclient"
)

// program starts testdata/client.py in mode as a client process, as the
// harness starts a --client program in a container.
func program(t *testing.T, mode string) (*Remote, *strings.Builder, error) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		dockertest.Unavailable(t, "python3 (apt-get install python3), which runs the protocol's test client,", err)
	}
	cmd := exec.Command("python3", "testdata/client.py", mode)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() error {
		once.Do(func() {
			stdin.Close()
			cmd.Process.Kill()
			cmd.Wait()
		})
		return nil
	}
	t.Cleanup(func() { stop() })
	// python3 alone took about 5 s to answer ready on a machine at load
	// 20: the deadline is for a program that never answers, not a slow one.
	// The silent one is waited for briefly: only its deadline is tested.
	deadline := 20 * time.Second
	if mode == "silent" {
		deadline = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	init := lockclient.Init{Process: 3, Node: "c3", Service: lockclient.Service{Backend: "zookeeper", Endpoints: []string{"n1:2181"}},
		LeaseTTLMs: 2000, Keys: []string{"k0"}}
	r, err := NewRemote(ctx, stdin, stdout, stop, init)
	return r, stderr, err
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A program in another language speaks the protocol: init and ready, each
// op, the checkpoint of a stopped write and its continue, a fenced write,
// an unknown op answered fail; it does not answer the clock, so its
// readings are not used.
func TestProgramSpeaksTheProtocol(t *testing.T) {
	r, _, err := program(t, "ok")
	if err != nil {
		t.Fatal(err)
	}
	if r.SharedClock() {
		t.Error("a program that answers clock with fail was taken to share the clock")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if tok, err := r.Acquire(ctx, "k0"); err != nil || tok != 7 {
		t.Fatalf("acquire: %d %v", tok, err)
	}
	if _, err := r.Acquire(ctx, "k0"); !isFail(err) {
		t.Fatalf("second acquire: %v, want a definite fail", err)
	}
	var stopped []string
	wctx := backends.WithFailpoint(ctx, func(name string) { stopped = append(stopped, name) })
	if err := r.Write(wctx, "k0", 7, 0, 1); err != nil {
		t.Fatal(err)
	}
	if len(stopped) != 1 || stopped[0] != lockclient.FailpointWriteChecked {
		t.Fatalf("checkpoints %q, want [write-checked]", stopped)
	}
	if v, err := r.Read(ctx, "k0", 7); err != nil || v != 1 {
		t.Fatalf("read: %d %v", v, err)
	}
	if err := r.Write(ctx, "k0", 3, 1, 2); !errors.Is(err, lockclient.ErrFenced) {
		t.Fatalf("stale write: %v, want fenced", err)
	}
	ans, err := r.Call(ctx, lockclient.Request{F: "cas", Key: "k0"})
	if err != nil || ans.Type != lockclient.TypeFail {
		t.Fatalf("unknown op: %+v %v", ans, err)
	}
	if err := r.Release(ctx, "k0"); err != nil {
		t.Fatal(err)
	}
	r.Close()
}

func isFail(err error) bool {
	typ, _ := lockclient.Outcome(err)
	return typ == lockclient.TypeFail
}

// A program that does not become ready is named for what it did.
func TestProgramThatIsNotReady(t *testing.T) {
	for mode, want := range map[string]string{
		"refuse":      "it refused: no ZooKeeper at n1:2181",
		"version":     "it speaks protocol 2; this fencecheck speaks 1",
		"silent":      "it never answered ready (context deadline exceeded)",
		"crash-start": "it never answered ready: it exited (its stdout closed)",
	} {
		t.Run(mode, func(t *testing.T) {
			_, stderr, err := program(t, mode)
			var h *HandshakeError
			if !errors.As(err, &h) || err.Error() != want {
				t.Fatalf("got %v, want %q", err, want)
			}
			if mode == "crash-start" && !strings.Contains(stderr.String(), "ImportError") {
				t.Errorf("stderr %q lacks the traceback", stderr.String())
			}
		})
	}
}

// A program that floods, speaks garbage, crashes or hangs mid-op: the op
// is unknown (info), the reason names what it did, and the process is
// retired (the next op fails definitely, without reaching it).
func TestProgramThatMisbehavesMidOp(t *testing.T) {
	for mode, want := range map[string]string{
		"flood":   "it wrote a line over 64 KiB during acquire",
		"garbage": `it answered acquire (id 2) with garbage "Traceback (most recent call last):"`,
		"crash":   "it exited (its stdout closed) during acquire",
		"hang":    "it did not answer acquire (id 2) before the op's deadline",
		"chatty":  "it wrote more than 64 lines on stdout that answer nothing",
	} {
		t.Run(mode, func(t *testing.T) {
			r, _, err := program(t, mode)
			if mode == "chatty" && err != nil {
				// It may flood before the handshake's clock request.
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gone error
			r.Gone = func(err error) { gone = err }
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err = r.Acquire(ctx, "k0")
			if typ, _ := lockclient.Outcome(err); typ != lockclient.TypeInfo || !errors.Is(err, ErrAgentGone) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v (%s), want info naming %q", err, typ, want)
			}
			if gone == nil || !strings.Contains(gone.Error(), want) {
				t.Errorf("Gone was told %v", gone)
			}
			if _, err := r.Read(context.Background(), "k0", 7); !isFail(err) {
				t.Errorf("an op after the process was retired: %v", err)
			}
		})
	}
}
