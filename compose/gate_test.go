package compose

import (
	"context"
	"errors"
	"strings"
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
