package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
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
	err := DaemonError("unix:///x.sock", context.Canceled)
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "cannot reach") || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("cancelled: %v", err)
	}
	// A deadline that passed is a daemon that did not answer in time, not
	// one that cannot be reached.
	err = DaemonError("unix:///x.sock", context.DeadlineExceeded)
	if !strings.Contains(err.Error(), "the Docker daemon at unix:///x.sock did not answer in time") || strings.Contains(err.Error(), "cannot reach") {
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

// hungSocket is a Unix socket that accepts connections and never answers.
func hungSocket(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
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
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return sock
}

// An unpause the daemon never answers fails within the bound on its
// answer, or within the caller's deadline, with a message that names the
// daemon, the request and the time it was given — never "cannot reach".
func TestUnansweredUnpauseSaysWhatDidNotAnswer(t *testing.T) {
	sock := hungSocket(t)
	for _, c := range []struct {
		name           string
		bound, ctxWait time.Duration
		within         string
	}{
		{"the client's bound", 700 * time.Millisecond, time.Minute, "within 700ms"},
		{"the caller's deadline", time.Minute, 1500 * time.Millisecond, "within 1.5s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			httpClient := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: c.bound}}
			cli, err := client.NewClientWithOpts(client.WithHTTPClient(httpClient), client.WithHost("unix://"+sock), client.WithVersion("1.41"))
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			cl := &Cluster{TestID: "t", cli: cli, Containers: []*Container{{Name: "c1", ContainerID: "0123456789ab"}}}
			ctx, cancel := context.WithTimeout(context.Background(), c.ctxWait)
			defer cancel()
			start := time.Now()
			err = cl.Unpause(ctx, "c1")
			took := time.Since(start)
			if err == nil {
				t.Fatal("an unanswered unpause succeeded")
			}
			msg := err.Error()
			want := "the Docker daemon at unix://" + sock + " did not answer the unpause of c1 " + c.within
			if !strings.Contains(msg, want) || strings.Contains(msg, "cannot reach") {
				t.Errorf("error %q\nwant it to contain %q", msg, want)
			}
			if took > 10*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}
}

// The bound comes from FENCECHECK_DOCKER_TIMEOUT; a bad value names the
// variable and what it accepts.
func TestResponseTimeoutFromTheEnvironment(t *testing.T) {
	t.Setenv(TimeoutEnv, "")
	if d, err := ResponseTimeout(); err != nil || d != 3*time.Minute {
		t.Errorf("unset: %s %v", d, err)
	}
	t.Setenv(TimeoutEnv, "20s")
	if d, err := ResponseTimeout(); err != nil || d != 20*time.Second {
		t.Errorf("20s: %s %v", d, err)
	}
	for _, bad := range []string{"soon", "10ms", "2h"} {
		t.Setenv(TimeoutEnv, bad)
		_, err := ResponseTimeout()
		if err == nil || !strings.Contains(err.Error(), TimeoutEnv) || !strings.Contains(err.Error(), "1s to 1h") {
			t.Errorf("%q: %v", bad, err)
		}
		if _, err := Connect(context.Background()); err == nil || !strings.Contains(err.Error(), TimeoutEnv) {
			t.Errorf("Connect with %s=%q: %v", TimeoutEnv, bad, err)
		}
	}
}
