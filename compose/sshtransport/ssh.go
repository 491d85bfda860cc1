// Package sshtransport carries the Docker Engine API over ssh the way the
// docker command line does: each connection is its own `ssh host docker
// system dial-stdio` process, whose stdin and stdout are the connection.
// compose/engine's Connect dials through it when DOCKER_HOST is ssh://.
//
// It is a transport only: it never speaks the API, names no container and
// decides no timeout (the bound comes from engine). ssh must never prompt
// (it runs in batch mode), and every process it starts is killed and
// reaped when its connection closes.
package sshtransport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/internal/words"
)

// OptsEnv names the variable whose words are passed to ssh before the
// host when DOCKER_HOST is ssh://, e.g. "-i /path/key -o
// UserKnownHostsFile=/path/known_hosts". It is split on white space; there
// is no quoting.
const OptsEnv = "FENCECHECK_SSH_OPTS"

// Engine reaches a Docker engine on another host the way the docker
// command line does: every new connection is a new `ssh host docker system
// dial-stdio` process whose stdin and stdout carry the API's bytes. ssh
// never prompts (BatchMode), runs in its own process group so that a
// terminal's Ctrl-C reaches only fencecheck (which then heals and tears
// down through these very connections), and is killed and reaped when its
// connection closes.
type Engine struct {
	host    string   // ssh://user@host:port as given
	args    []string // ssh's arguments, up to and including the remote command
	timeout time.Duration

	mu   sync.Mutex
	last error // the last failure of an ssh process, for Connect's message
}

// New parses an ssh:// DOCKER_HOST. opts are the words of
// OptsEnv; bound is the bound on the daemon's answer, used as ssh's
// connect timeout too.
func New(host string, opts []string, bound time.Duration) (*Engine, error) {
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "ssh" || u.Hostname() == "" {
		return nil, fmt.Errorf("DOCKER_HOST=%s: want ssh://[user@]host[:port]", host)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("DOCKER_HOST=%s: an ssh:// engine takes no path or query: want ssh://[user@]host[:port]", host)
	}
	if _, set := u.User.Password(); set {
		return nil, fmt.Errorf("DOCKER_HOST=%s: a password in DOCKER_HOST is not supported (ssh runs in batch mode): use a key, e.g. %s=\"-i KEY\"", host, OptsEnv)
	}
	args := append([]string(nil), opts...)
	secs := int(bound / time.Second)
	if secs < 1 {
		secs = 1
	}
	args = append(args, "-o", "BatchMode=yes", "-o", "ConnectTimeout="+strconv.Itoa(secs), "-T")
	if u.User != nil && u.User.Username() != "" {
		args = append(args, "-l", u.User.Username())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("DOCKER_HOST=%s: port %q is not a port number", host, p)
		}
		args = append(args, "-p", p)
	}
	args = append(args, "--", u.Hostname(), "docker", "system", "dial-stdio")
	return &Engine{host: host, args: args, timeout: bound}, nil
}

// Opts returns the words of OptsEnv.
func Opts() []string { return strings.Fields(os.Getenv(OptsEnv)) }

// Dial starts one ssh process and returns its stdin and stdout as a
// connection. network and addr are the HTTP client's and mean nothing here.
func (e *Engine) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := exec.LookPath("ssh")
	if err != nil {
		return nil, &Error{host: e.host, msg: "the ssh command is not on PATH (install openssh-client)"}
	}
	// Pipes of our own, so that reads and writes can have deadlines.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &conn{engine: e, stdin: inW, stdout: outR, done: make(chan struct{})}
	c.cmd = exec.Command(path, e.args...)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.WaitDelay = time.Second // a child of ssh holding stderr open
	if err := c.cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, &Error{host: e.host, msg: "starting ssh: " + err.Error()}
	}
	inR.Close()
	outW.Close()
	go func() {
		c.waitErr = c.cmd.Wait() // reaps it, whatever ends it
		if c.waitErr != nil {
			e.mu.Lock()
			e.last = c.failure()
			e.mu.Unlock()
		}
		close(c.done)
	}()
	return c, nil
}

// lastFailure is the last ssh process's failure, if any.
func (e *Engine) lastFailure() *Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var se *Error
	if errors.As(e.last, &se) {
		return se
	}
	return nil
}

// Unreachable is Connect's error when the first request through ssh got
// no answer (err): what ssh said, or, when timedOut (the caller's judgement
// of err: the bound on the answer passed), that nothing came back in time.
func (e *Engine) Unreachable(err error, timedOut bool) error {
	if timedOut {
		msg := fmt.Sprintf("no answer through ssh within %s", e.timeout)
		if se := e.lastFailure(); se != nil {
			msg += " (ssh said: " + se.msg + ")"
		}
		return &Error{host: e.host, msg: msg}
	}
	if se := e.lastFailure(); se != nil {
		return se
	}
	var se *Error
	if errors.As(err, &se) {
		return se
	}
	return &Error{host: e.host, msg: err.Error()}
}

// Error is an ssh connection that could not be made or broke: msg is
// what ssh said on its stderr.
type Error struct {
	host string
	msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("the Docker engine at %s cannot be reached: %s; check DOCKER_HOST / ssh access (%s) and that the docker command is on the remote host's PATH",
		e.host, e.msg, OptsEnv)
}

// conn is one ssh process as a net.Conn.
type conn struct {
	engine *Engine
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr lockedBuffer

	done    chan struct{} // closed once the process is reaped
	waitErr error

	closeOnce sync.Once
	wclose    sync.Once
}

// failure describes a finished process that failed; call after done.
func (c *conn) failure() error {
	msg := strings.TrimSpace(c.stderr.String())
	if msg == "" {
		msg = "ssh " + c.waitErr.Error()
	}
	msg = strings.ReplaceAll(msg, "\r", "")
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " | ")), " ")
	return &Error{host: c.engine.host, msg: words.Tail(msg, 600)}
}

func (c *conn) Read(b []byte) (int, error) {
	n, err := c.stdout.Read(b)
	if errors.Is(err, io.EOF) {
		// ssh ended: a clean end is EOF; a failed one says why.
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
			return n, err
		}
		if c.waitErr != nil {
			return n, c.failure()
		}
	}
	return n, err
}

func (c *conn) Write(b []byte) (int, error) { return c.stdin.Write(b) }

// CloseWrite ends what ssh reads, so the daemon sees the end of an exec's
// stdin.
func (c *conn) CloseWrite() error {
	var err error
	c.wclose.Do(func() { err = c.stdin.Close() })
	return err
}

// Close ends the process and reaps it: its stdin is closed, and it is
// killed (with its process group) if it has not ended on its own within a
// second.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.CloseWrite()
		c.stdout.Close()
		select {
		case <-c.done:
		case <-time.After(time.Second):
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	})
	return nil
}

func (c *conn) LocalAddr() net.Addr  { return addr("fencecheck") }
func (c *conn) RemoteAddr() net.Addr { return addr(c.engine.host) }

func (c *conn) SetDeadline(t time.Time) error {
	return errors.Join(c.stdin.SetWriteDeadline(t), c.stdout.SetReadDeadline(t))
}
func (c *conn) SetReadDeadline(t time.Time) error  { return c.stdout.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.stdin.SetWriteDeadline(t) }

type addr string

func (a addr) Network() string { return "ssh" }
func (a addr) String() string  { return string(a) }

// lockedBuffer is ssh's stderr, written by exec's copier and read by us.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil // enough to say why
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
