package buildlock

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer two goroutines may write.
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

// Two holders of one lock (two open files: flock excludes them as it
// excludes two processes) build one after the other; the second says
// what it waits for and who holds it, and its wait is counted.
func TestSecondWaitsAndSaysWhy(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	release, err := Acquire(context.Background(), "etcd-3.5-linux-amd64", "etcd 3.5's compile", nil)
	if err != nil {
		t.Fatal(err)
	}
	before := Waited()
	var out syncBuffer
	got := make(chan time.Time, 1)
	go func() {
		r, err := Acquire(context.Background(), "etcd-3.5-linux-amd64", "etcd 3.5's compile", &out)
		if err != nil {
			t.Error(err)
		}
		got <- time.Now()
		r()
	}()
	time.Sleep(1200 * time.Millisecond)
	released := time.Now()
	release()
	select {
	case at := <-got:
		if at.Before(released) {
			t.Fatalf("the second holder got the lock before the first let go")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second holder never got the lock")
	}
	if w := Waited() - before; w < time.Second {
		t.Errorf("Waited grew by %s, want at least the 1.2 s the second holder waited", w)
	}
	s := out.String()
	for _, want := range []string{"waiting for etcd 3.5's compile: process ", "waited "} {
		if !strings.Contains(s, want) {
			t.Errorf("progress %q lacks %q", s, want)
		}
	}
}

// A wait ends with its context, naming what it waited for.
func TestWaitEndsWithContext(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	release, err := Acquire(context.Background(), "node-image", "the node image", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	_, err = Acquire(ctx, "node-image", "the node image", nil)
	if err == nil || !strings.Contains(err.Error(), "waiting for the node image") {
		t.Fatalf("err = %v, want one naming the node image", err)
	}
}

// Different names never wait on each other.
func TestNamesAreIndependent(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	a, err := Acquire(context.Background(), "a", "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	b, err := Acquire(ctx, "b", "b", nil)
	if err != nil {
		t.Fatalf("b waited on a: %v", err)
	}
	b()
}

// The time a process holds a build's lock (it makes the build) counts
// in Waited, as a wait for another's does.
func TestHoldingCounts(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	before := Waited()
	release, err := Acquire(context.Background(), "hold", "a compile", nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	release()
	release() // twice is harmless, and counts once
	if w := Waited() - before; w < 300*time.Millisecond || w > 2*time.Second {
		t.Errorf("Waited grew by %s over a 300 ms hold, want about that", w)
	}
}
