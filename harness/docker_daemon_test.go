package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/internal/dockertest"
	"github.com/fencecheck/fencecheck/models"
)

// socketProxy stands for the Docker daemon: it forwards a Unix socket of
// its own to the real one until Cut, which closes the listener (removing
// the socket file) and every open connection, as a daemon that went away
// would.
type socketProxy struct {
	path, target string
	ln           net.Listener
	mu           sync.Mutex
	conns        map[net.Conn]bool
	cut          bool

	// inspect: read each request (see HoldUnpause) instead of copying
	// bytes blindly.
	inspect bool
	// holdArmed: the next unpause is held; held is its container, about
	// which nothing is answered from then on.
	holdArmed bool
	held      string
	heldAt    time.Time
}

// HoldUnpause makes the proxy hold the next unpause request — never pass
// it on, never answer it — and from then on every request about that
// container, as a daemon stuck on one container would. The proxy must
// have been started with startInspectingProxy.
func (p *socketProxy) HoldUnpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdArmed = true
}

// Held is the container whose requests are held, and since when.
func (p *socketProxy) Held() (string, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, p.heldAt
}

var unpausePath = regexp.MustCompile(`/containers/([^/]+)/unpause$`)

// holds says whether the proxy keeps req from the daemon.
func (p *socketProxy) holds(req *http.Request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == "" && p.holdArmed {
		if m := unpausePath.FindStringSubmatch(req.URL.Path); m != nil {
			p.held, p.heldAt = m[1], time.Now()
		}
	}
	return p.held != "" && strings.Contains(req.URL.Path, "/containers/"+p.held)
}

// forwardRequests passes requests from c to the daemon d one by one,
// holding those p.holds; after an upgrade (an exec's stream) it copies
// bytes.
func (p *socketProxy) forwardRequests(d, c net.Conn) {
	closeWrite := func() {
		if cw, ok := d.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			closeWrite()
			return
		}
		if p.holds(req) {
			return // never answered: the connection stays open until Cut
		}
		if err := req.Write(d); err != nil {
			return
		}
		if req.Header.Get("Upgrade") != "" {
			io.Copy(d, br)
			closeWrite()
			return
		}
	}
}

// startInspectingProxy is startSocketProxy reading each request, so that
// HoldUnpause can hold some.
func startInspectingProxy(t *testing.T) *socketProxy {
	p := startSocketProxy(t)
	p.mu.Lock()
	p.inspect = true
	p.mu.Unlock()
	return p
}

func startSocketProxy(t *testing.T) *socketProxy {
	t.Helper()
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		target = strings.TrimPrefix(h, "unix://")
	} else if h != "" {
		dockertest.Unavailable(t, "an engine on a Unix socket (the test puts a proxy in front of it)", fmt.Errorf("DOCKER_HOST=%s is not one", h))
	}
	// A short directory: socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "fcd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &socketProxy{path: filepath.Join(dir, "docker.sock"), target: target, conns: map[net.Conn]bool{}}
	p.ln, err = net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Cut)
	go p.serve()
	return p
}

func (p *socketProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial("unix", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, d) {
			continue
		}
		// Each direction is copied until its end, which is passed on as
		// a half-close (an exec's stdin ends that way).
		pipe := func(dst, src net.Conn) {
			io.Copy(dst, src)
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
		}
		p.mu.Lock()
		inspect := p.inspect
		p.mu.Unlock()
		if inspect {
			go p.forwardRequests(d, c)
		} else {
			go pipe(d, c)
		}
		go pipe(c, d)
	}
}

func (p *socketProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

// Cut makes the daemon go away: no new connection, every open one closed.
func (p *socketProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
}

// The Docker daemon goes away mid-workload, with a client container
// frozen: the run ends within a bounded time with an error naming the
// daemon's address and the command that removes what was left, the
// history is flushed and whole, and results.json says the run failed
// (verdict unknown). The test then removes the leftovers through the
// real socket.
func TestDockerDaemonGoneMidRun(t *testing.T) {
	bin := dockerOrSkip(t)
	ctx := context.Background()
	cli, err := engine.Connect(ctx) // the real daemon, for the cleanup
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	proxy := startSocketProxy(t)
	t.Setenv("DOCKER_HOST", "unix://"+proxy.path)

	cfg := dockerConfig(t, "memory", "all", "pause")
	cfg.AgentBinary = bin
	cfg.Clients = 3
	cfg.TimeLimit = 2 * time.Minute // only the daemon's going away ends it in time
	cfg.NemesisInterval = time.Second
	cfg.PauseDuration = 30 * time.Second
	st := &runState{testID: uniqueTestID("memory")}
	id := st.testID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		engine.DownAll(ctx, cli, id)
	})
	var cutAt time.Time
	var mu sync.Mutex
	st.phaseHook = func(p string) {
		if p != "workload" {
			return
		}
		// Cut once a client is frozen and the workload has run a while.
		go func() {
			time.Sleep(time.Second)
			for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				objs, _ := engine.List(ctx, cli, id)
				for _, o := range objs {
					if o.State == "paused" {
						mu.Lock()
						cutAt = time.Now()
						mu.Unlock()
						t.Logf("%s paused: cutting the daemon off", o.Name)
						proxy.Cut()
						return
					}
				}
			}
			t.Error("no client was frozen within 20 s")
			proxy.Cut()
		}()
	}
	out, runErr := runWith(quiet(), cfg, testWriter{t}, st)
	mu.Lock()
	after := time.Since(cutAt)
	mu.Unlock()
	if runErr == nil {
		t.Fatal("the run succeeded without its daemon")
	}
	t.Logf("the run ended %s after the daemon went away: %v", after.Round(time.Millisecond), runErr)
	if after > 45*time.Second {
		t.Errorf("the run ended %s after the daemon went away", after)
	}
	msg := runErr.Error()
	for _, want := range []string{"unix://" + proxy.path, "check cluster down --id " + id} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not name %q:\n%s", want, msg)
		}
	}
	if errors.Is(runErr, context.Canceled) {
		t.Errorf("the error reads as an interrupt: %v", runErr)
	}
	checkStore(t, out, runErr)
	if out.Result.Verdict != models.Unknown {
		t.Errorf("verdict %s, want unknown", out.Result.Verdict)
	}
	if out.Interrupted {
		t.Error("the run says it was interrupted: nobody sent a signal")
	}

	// What the message asks for, through the real socket.
	left, err := engine.List(ctx, cli, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) == 0 {
		t.Fatal("nothing was left behind: did the daemon really go away?")
	}
	t.Logf("left behind: %v", left)
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := engine.DownAll(dctx, cli, id); err != nil {
		t.Fatal(err)
	}
	if left, err := engine.List(ctx, cli, id); err != nil || len(left) != 0 {
		t.Errorf("after check cluster down: %v %v", left, err)
	}
}

// The Docker daemon stops answering about a frozen client: the proxy holds
// the unpause that heals it, and every later request about that container.
// The run ends within a bound (the daemon's answer is bounded at 5 s here,
// by FENCECHECK_DOCKER_TIMEOUT), heals what it can, and its error names the
// daemon, what it did not answer, the heal it could not do and the command
// that removes what was left; the verdict is unknown (exit 255).
func TestDockerUnansweredUnpauseEndsTheRunInBoundedTime(t *testing.T) {
	bin := dockerOrSkip(t)
	ctx := context.Background()
	cli, err := engine.Connect(ctx) // the real daemon, for the cleanup
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	proxy := startInspectingProxy(t)
	t.Setenv("DOCKER_HOST", "unix://"+proxy.path)
	t.Setenv(engine.TimeoutEnv, "5s")

	cfg := dockerConfig(t, "memory", "all", "pause-holder")
	cfg.AgentBinary = bin
	cfg.Clients = 3
	cfg.TimeLimit = 2 * time.Minute // only the unanswered heal ends it in time
	cfg.NemesisInterval = time.Second
	st := &runState{testID: uniqueTestID("memory")}
	id := st.testID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		engine.DownAll(ctx, cli, id) // resumes the held container first
	})
	st.phaseHook = func(p string) {
		if p == "workload" {
			proxy.HoldUnpause()
		}
	}
	began := time.Now()
	out, runErr := runWith(quiet(), cfg, testWriter{t}, st)
	ended := time.Now()
	held, heldAt := proxy.Held()
	if held == "" {
		t.Fatalf("no unpause was held (run error: %v)", runErr)
	}
	after := ended.Sub(heldAt)
	t.Logf("the run took %s, %s after the unpause of %s was held: %v", ended.Sub(began).Round(time.Millisecond), after.Round(time.Millisecond), held[:12], runErr)
	if runErr == nil {
		t.Fatal("the run succeeded with a client that could not be resumed")
	}
	if after > 90*time.Second {
		t.Errorf("the run ended %s after the daemon stopped answering about %s", after, held[:12])
	}
	msg := runErr.Error()
	for _, want := range []string{
		"the Docker daemon at unix://" + proxy.path + " did not answer the unpause of c",
		"could not heal pause-holder",
		"check cluster down --id " + id,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "cannot reach") {
		t.Errorf("the error says the daemon cannot be reached; it was reached and did not answer:\n%s", msg)
	}
	checkStore(t, out, runErr)
	if out.Result.Verdict != models.Unknown {
		t.Errorf("verdict %s, want unknown", out.Result.Verdict)
	}
	// What was left is what the message says: the held container.
	left, err := engine.List(ctx, cli, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("left behind: %v", left)
	if len(left) == 0 {
		t.Error("nothing was left behind, yet the error says to remove leftovers")
	}
}
