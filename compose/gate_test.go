package compose

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A pause waits for the starts going on in its node (and only its node),
// and a start waits while a pause is applied.
func TestPauseWaitsForStarts(t *testing.T) {
	c := &Cluster{}
	release := c.HoldOffPause("c1")
	inner := c.HoldOffPause("c1") // starts nest
	paused := make(chan struct{})
	go c.pausing("c1", func() error { close(paused); return nil })
	if err := c.pausing("c2", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-paused:
		t.Fatal("the pause landed while a start was going on")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	release() // idempotent
	inner()
	select {
	case <-paused:
	case <-time.After(5 * time.Second):
		t.Fatal("the pause never ran after the starts ended")
	}

	applying := make(chan struct{})
	done := make(chan struct{})
	go c.pausing("c1", func() error { close(applying); <-done; return nil })
	<-applying
	started := make(chan struct{})
	go func() { c.HoldOffPause("c1")(); close(started) }()
	select {
	case <-started:
		t.Fatal("a start began while a pause was applied")
	case <-time.After(100 * time.Millisecond):
	}
	close(done)
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the start never began after the pause")
	}
}

// An interrupt is not an unreachable daemon.
func TestDaemonErrorCancelled(t *testing.T) {
	err := daemonError("unix:///x.sock", context.Canceled)
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "cannot reach") || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("cancelled: %v", err)
	}
	err = daemonError("unix:///x.sock", context.DeadlineExceeded)
	if !strings.Contains(err.Error(), "cannot reach the Docker daemon at unix:///x.sock") {
		t.Errorf("deadline: %v", err)
	}
}

// A daemon that accepts connections but never answers fails Connect within
// the response bound, with a message that says so.
func TestHungDaemonFailsInBoundedTime(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	old := responseTimeout
	responseTimeout = 500 * time.Millisecond
	defer func() { responseTimeout = old }()
	start := time.Now()
	_, err = Connect(context.Background())
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), sock) {
		t.Fatalf("Connect to a hung daemon: %v", err)
	}
	if took > 10*time.Second {
		t.Fatalf("Connect took %s to give up", took)
	}
}
