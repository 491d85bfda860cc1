package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/memory"
	"github.com/fencecheck/fencecheck/lockclient"
)

// pipeAgent runs Serve in a goroutine over pipes, as `check agent` runs
// behind an exec stream.
func pipeAgent(t *testing.T, c backends.Client) *Remote {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		Serve(inR, outW, func(context.Context, lockclient.Init) (backends.Client, error) { return c, nil })
		outW.Close()
	}()
	r, err := NewRemote(context.Background(), inW, outR, func() error { inR.Close(); outW.Close(); return nil }, lockclient.Init{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRemoteRunsTheSection(t *testing.T) {
	svc := memory.NewService(time.Second)
	store := fenced.NewStore(fenced.All)
	r := pipeAgent(t, memory.NewClient(svc, store, time.Second, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tok, err := r.Acquire(ctx, "k0")
	if err != nil || tok != 1 {
		t.Fatalf("acquire: %d %v", tok, err)
	}
	v, err := r.Read(ctx, "k0", tok)
	if err != nil || v != 0 {
		t.Fatalf("read: %d %v", v, err)
	}
	if err := r.Write(ctx, "k0", tok, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx, "k0"); err != nil {
		t.Fatal(err)
	}
	// A stale token comes back as the storage's definite refusal.
	tok, err = r.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	store.Write(ctx, "k0", tok+10, 5)
	if _, err := r.Read(ctx, "k0", tok); !errors.Is(err, lockclient.ErrFenced) {
		t.Fatalf("stale read: %v", err)
	}
	r.Close()
}

// fakeAgent answers with whatever script says, to exercise the harness
// side against agents that misbehave.
func fakeAgent(t *testing.T, script func(req string, w io.Writer)) *Remote {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		buf := make([]byte, 4096)
		inR.Read(buf) // init
		io.WriteString(outW, `{"type":"ready","protocol":1}`+"\n")
		for {
			n, err := inR.Read(buf)
			if err != nil {
				outW.Close()
				return
			}
			if strings.Contains(string(buf[:n]), `"f":"clock"`) {
				now, _ := lockclient.Monotonic()
				fmt.Fprintf(outW, `{"id":1,"type":"ok","value":%d}`+"\n", now)
				continue
			}
			script(string(buf[:n]), outW)
		}
	}()
	r, err := NewRemote(context.Background(), inW, outR, func() error { inR.Close(); outW.Close(); return nil }, lockclient.Init{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGarbageHangAndDeathAreUnknown(t *testing.T) {
	cases := map[string]func(string, io.Writer){
		"garbage": func(_ string, w io.Writer) { io.WriteString(w, "panic: runtime error\n") },
		"hang":    func(string, io.Writer) {},
		"death":   func(_ string, w io.Writer) { w.(*io.PipeWriter).Close() },
	}
	for name, script := range cases {
		r := fakeAgent(t, script)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := r.Acquire(ctx, "k0")
		cancel()
		if typ, _ := lockclient.Outcome(err); typ != lockclient.TypeInfo || !errors.Is(err, ErrAgentGone) {
			t.Errorf("%s: %v → %s, want info (agent gone)", name, err, typ)
		}
		// The process is retired: the next call fails definitely.
		_, err = r.Read(context.Background(), "k0", 1)
		if typ, _ := lockclient.Outcome(err); typ != lockclient.TypeFail {
			t.Errorf("%s: a call after the agent died: %v", name, err)
		}
	}
}

func TestAgentThatNeverStarts(t *testing.T) {
	inR, outW := io.Pipe()
	outR, w := io.Pipe()
	go func() { io.WriteString(w, "exec: check: not found\n") }()
	go io.Copy(io.Discard, inR)
	_, err := NewRemote(context.Background(), outW, outR, func() error { return nil }, lockclient.Init{})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("got %v", err)
	}
}

// FuzzServe: no request line makes the agent panic.
func FuzzServe(f *testing.F) {
	f.Add(`{"id":1,"f":"acquire","key":"k0","timeout_ms":100}`)
	f.Add(`{"id":2,"f":"write","key":"k0","token":1,"prev":0,"value":1}`)
	f.Add(`{"id":3,"f":"cas"}`)
	f.Fuzz(func(t *testing.T, line string) {
		svc := memory.NewService(time.Second)
		c := memory.NewClient(svc, fenced.NewStore(fenced.All), time.Second, nil)
		defer c.Close()
		Serve(strings.NewReader(`{"type":"init","protocol":1}`+"\n"+line+"\n"), io.Discard,
			func(context.Context, lockclient.Init) (backends.Client, error) { return c, nil })
	})
}

// The agent's own readings of each op reach the history: they lie inside
// the harness's view of the op, and a Remote trusts them only once it has
// seen that the agent's clock is its own.
func TestRemoteReportsTheAgentsSpan(t *testing.T) {
	svc := memory.NewService(time.Second)
	r := pipeAgent(t, memory.NewClient(svc, fenced.NewStore(fenced.All), time.Second, nil))
	defer r.Close()
	if !r.SharedClock() {
		t.Fatal("an agent in this process does not share the clock")
	}
	before, _ := lockclient.Monotonic()
	if _, err := r.Acquire(context.Background(), "k0"); err != nil {
		t.Fatal(err)
	}
	after, _ := lockclient.Monotonic()
	call, ret, ok := r.LastSpan()
	if !ok || call < before || ret < call || ret > after {
		t.Fatalf("span [%d, %d] ok=%v, want inside [%d, %d]", call, ret, ok, before, after)
	}

	// An agent whose clock is another machine's: its readings are ignored.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		buf := make([]byte, 4096)
		inR.Read(buf) // init
		io.WriteString(outW, `{"type":"ready","protocol":1}`+"\n")
		for id := 1; ; id++ {
			if _, err := inR.Read(buf); err != nil {
				outW.Close()
				return
			}
			fmt.Fprintf(outW, `{"id":%d,"type":"ok","value":7,"call":5,"return":6}`+"\n", id)
		}
	}()
	other, err := NewRemote(context.Background(), inW, outR, func() error { inR.Close(); outW.Close(); return nil }, lockclient.Init{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.SharedClock() {
		t.Fatal("a clock reading of 7 ns was taken as shared")
	}
	other.Release(context.Background(), "k0")
	if _, _, ok := other.LastSpan(); ok {
		t.Fatal("readings from a foreign clock were trusted")
	}
}
