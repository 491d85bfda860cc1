package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/history/simulate"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// SIGINT during analyze stops the check, which has no workload to stop:
// the verdict is unknown and says it was interrupted, though the whole
// history, had it been checked, is valid. The history comes through a
// named pipe, so the signal lands while the check is surely running.
func TestSIGINTDuringAnalyzeIsUnknown(t *testing.T) {
	guardSIGINT(t)

	var lines bytes.Buffer
	var last int64
	var lastTime int64
	err := simulate.Synthetic{Seed: 1, Ops: 20000, Keys: 1, Clients: 5, Fenced: true}.Events(func(e history.Event) error {
		b, err := json.Marshal(e)
		lines.Write(b)
		lines.WriteByte('\n')
		last, lastTime = e.Index, e.Time
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A finished history: what the generator left open ends in info,
	// then the end event.
	h, err := history.Load(bytes.NewReader(lines.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range h.Open {
		last++
		b, _ := json.Marshal(history.Event{Index: last, Time: lastTime, Process: o.Process, Type: history.Info, F: o.F, Key: o.Key, Token: o.Token, Prev: o.Prev, Value: o.Value})
		lines.Write(append(b, '\n'))
	}
	fmt.Fprintf(&lines, `{"index":%d,"time":%d,"type":"end"}`+"\n", last+1, lastTime)
	whole := lines.Bytes()
	// The same history from a file: valid.
	path := writeHistory(t, string(whole))
	if code, out, _ := runCLI(t, "analyze", path); code != 0 {
		t.Fatalf("the whole history: exit %d\n%s", code, out)
	}

	fifo := filepath.Join(t.TempDir(), "history.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		dockertest.Unavailable(t, "a named pipe (the test streams a history through one)", err)
	}
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(t, "analyze", fifo)
		done <- result{code, out, errOut}
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(whole[:len(whole)/2])
	time.Sleep(100 * time.Millisecond)
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	w.Write(whole[len(whole)/2:]) // may fail: the check stopped reading
	w.Close()
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("analyze did not end after SIGINT")
	}
	if r.code != 2 || !strings.Contains(r.out, "UNKNOWN: the check was interrupted (interrupt) before it finished") {
		t.Errorf("exit %d, want 2 and the interrupt named\n%s%s", r.code, r.out, r.err)
	}
	if strings.Contains(r.out+r.err, "workload") {
		t.Errorf("analyze speaks of a workload:\n%s%s", r.out, r.err)
	}
}
