package compose

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
)

// SSHOptsEnv names the variable whose words are passed to ssh before the
// host when DOCKER_HOST is ssh://, e.g. "-i /path/key -o
// UserKnownHostsFile=/path/known_hosts". It is split on white space; there
// is no quoting.
const SSHOptsEnv = "FENCECHECK_SSH_OPTS"

// sshEngine reaches a Docker engine on another host the way the docker
// command line does: every new connection is a new `ssh host docker system
// dial-stdio` process whose stdin and stdout carry the API's bytes. ssh
// never prompts (BatchMode), runs in its own process group so that a
// terminal's Ctrl-C reaches only fencecheck (which then heals and tears
// down through these very connections), and is killed and reaped when its
// connection closes.
type sshEngine struct {
	host    string   // ssh://user@host:port as given
	args    []string // ssh's arguments, up to and including the remote command
	timeout time.Duration

	mu   sync.Mutex
	last error // the last failure of an ssh process, for Connect's message
}

// newSSHEngine parses an ssh:// DOCKER_HOST. opts are the words of
// SSHOptsEnv; bound is the bound on the daemon's answer, used as ssh's
// connect timeout too.
func newSSHEngine(host string, opts []string, bound time.Duration) (*sshEngine, error) {
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "ssh" || u.Hostname() == "" {
		return nil, fmt.Errorf("DOCKER_HOST=%s: want ssh://[user@]host[:port]", host)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("DOCKER_HOST=%s: an ssh:// engine takes no path or query: want ssh://[user@]host[:port]", host)
	}
	if _, set := u.User.Password(); set {
		return nil, fmt.Errorf("DOCKER_HOST=%s: a password in DOCKER_HOST is not supported (ssh runs in batch mode): use a key, e.g. %s=\"-i KEY\"", host, SSHOptsEnv)
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
	return &sshEngine{host: host, args: args, timeout: bound}, nil
}

// sshOpts returns the words of SSHOptsEnv.
func sshOpts() []string { return strings.Fields(os.Getenv(SSHOptsEnv)) }

// dial starts one ssh process and returns its stdin and stdout as a
// connection. network and addr are the HTTP client's and mean nothing here.
func (e *sshEngine) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := exec.LookPath("ssh")
	if err != nil {
		return nil, &sshError{host: e.host, msg: "the ssh command is not on PATH (install openssh-client)"}
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
	c := &sshConn{engine: e, stdin: inW, stdout: outR, done: make(chan struct{})}
	c.cmd = exec.Command(path, e.args...)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.WaitDelay = time.Second // a child of ssh holding stderr open
	if err := c.cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, &sshError{host: e.host, msg: "starting ssh: " + err.Error()}
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
func (e *sshEngine) lastFailure() *sshError {
	e.mu.Lock()
	defer e.mu.Unlock()
	var se *sshError
	if errors.As(e.last, &se) {
		return se
	}
	return nil
}

// unreachable is Connect's error when the first request through ssh got
// no answer (err): what ssh said, or that nothing came back in time.
func (e *sshEngine) unreachable(err error) error {
	if noAnswer(err) {
		msg := fmt.Sprintf("no answer through ssh within %s", e.timeout)
		if se := e.lastFailure(); se != nil {
			msg += " (ssh said: " + se.msg + ")"
		}
		return &sshError{host: e.host, msg: msg}
	}
	if se := e.lastFailure(); se != nil {
		return se
	}
	var se *sshError
	if errors.As(err, &se) {
		return se
	}
	return &sshError{host: e.host, msg: err.Error()}
}

// sshError is an ssh connection that could not be made or broke: msg is
// what ssh said on its stderr.
type sshError struct {
	host string
	msg  string
}

func (e *sshError) Error() string {
	return fmt.Sprintf("the Docker engine at %s cannot be reached: %s; check DOCKER_HOST / ssh access (%s) and that the docker command is on the remote host's PATH",
		e.host, e.msg, SSHOptsEnv)
}

// sshConn is one ssh process as a net.Conn.
type sshConn struct {
	engine *sshEngine
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
func (c *sshConn) failure() error {
	msg := strings.TrimSpace(c.stderr.String())
	if msg == "" {
		msg = "ssh " + c.waitErr.Error()
	}
	msg = strings.ReplaceAll(msg, "\r", "")
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " | ")), " ")
	return &sshError{host: c.engine.host, msg: tail(msg, 600)}
}

func (c *sshConn) Read(b []byte) (int, error) {
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

func (c *sshConn) Write(b []byte) (int, error) { return c.stdin.Write(b) }

// CloseWrite ends what ssh reads, so the daemon sees the end of an exec's
// stdin.
func (c *sshConn) CloseWrite() error {
	var err error
	c.wclose.Do(func() { err = c.stdin.Close() })
	return err
}

// Close ends the process and reaps it: its stdin is closed, and it is
// killed (with its process group) if it has not ended on its own within a
// second.
func (c *sshConn) Close() error {
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

func (c *sshConn) LocalAddr() net.Addr  { return sshAddr("fencecheck") }
func (c *sshConn) RemoteAddr() net.Addr { return sshAddr(c.engine.host) }

func (c *sshConn) SetDeadline(t time.Time) error {
	return errors.Join(c.stdin.SetWriteDeadline(t), c.stdout.SetReadDeadline(t))
}
func (c *sshConn) SetReadDeadline(t time.Time) error  { return c.stdout.SetReadDeadline(t) }
func (c *sshConn) SetWriteDeadline(t time.Time) error { return c.stdin.SetWriteDeadline(t) }

type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }

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
