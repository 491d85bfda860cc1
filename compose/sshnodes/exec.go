package sshnodes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/fencecheck/fencecheck/compose/nodes"
	q "github.com/fencecheck/fencecheck/internal/shellquote"
)

// failMark starts what the driver's own wrapper writes to stderr when it
// cannot run a command (the cgroup cannot be joined, the directory is
// missing); with exit code wrapperExit it is the driver's error, not the
// command's.
const (
	failMark    = "fencecheck-sshnodes: "
	wrapperExit = 125
)

// session opens a session on the host's connection.
func (h *host) session() (*ssh.Session, error) {
	h.mu.Lock()
	c := h.client
	h.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%s: not connected", h.label())
	}
	s, err := c.NewSession()
	if err != nil {
		if strings.Contains(err.Error(), "administratively prohibited") {
			return nil, fmt.Errorf("%s: sshd refuses another session (%w): raise MaxSessions in its sshd_config", h.label(), err)
		}
		return nil, fmt.Errorf("%s: opening an SSH session: %w", h.label(), err)
	}
	return s, nil
}

// run runs line in the login's shell and waits for it. A command that
// fails is no error; a session that breaks, or ctx ending, is.
func (h *host) run(ctx context.Context, line string, stdin io.Reader) (nodes.ExecResult, error) {
	s, err := h.session()
	if err != nil {
		return nodes.ExecResult{ExitCode: -1}, err
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	if stdin != nil {
		s.Stdin = stdin
	}
	stop := context.AfterFunc(ctx, func() {
		s.Signal(ssh.SIGTERM)
		s.Close()
	})
	defer stop()
	err = s.Run(line)
	res := nodes.ExecResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *ssh.ExitError
	switch {
	case ctx.Err() != nil:
		res.ExitCode = -1
		return res, fmt.Errorf("%s: %w", h.label(), ctx.Err())
	case err == nil:
		return res, nil
	case errors.As(err, &exit):
		if exit.Signal() != "" {
			res.ExitCode = 128 + signalNumber(exit.Signal())
		} else {
			res.ExitCode = exit.ExitStatus()
		}
		return res, nil
	default:
		res.ExitCode = -1
		return res, fmt.Errorf("%s: the SSH session: %w", h.label(), err)
	}
}

// signalNumber is the Linux number of an SSH signal name.
func signalNumber(name string) int {
	n := map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "ABRT": 6, "FPE": 8, "KILL": 9, "SEGV": 11, "PIPE": 13,
		"ALRM": 14, "TERM": 15, "USR1": 10, "USR2": 12}[name]
	if n == 0 {
		return 0x7f
	}
	return n
}

// rootLine is the line that runs script as root with args as $1...: the
// login's shell execs /bin/sh, through `sudo -n` when the login is not
// root.
func (h *host) rootLine(script string, args []string) string {
	line := "/bin/sh -c " + q.Quote(script) + " sh"
	if len(args) > 0 {
		line += " " + q.Join(args)
	}
	if h.root {
		return "exec " + line
	}
	return "exec sudo -n " + line
}

// runRoot runs script as root and waits for it.
func (h *host) runRoot(ctx context.Context, script string, args []string) (nodes.ExecResult, error) {
	return h.run(ctx, h.rootLine(script, args), nil)
}

// joinScript puts the shell running it into the test's cgroup of the
// node, where there is one.
func (h *host) joinScript() string {
	if h.freezer != "cgroup2" && h.freezer != "cgroup1" {
		return ""
	}
	cg := q.Quote(h.cgroup)
	return fmt.Sprintf("{ echo $$ > %s/cgroup.procs; } 2>/dev/null || { echo %s >&2; exit %d; }\n", cg, q.Quote(failMark+"cannot join the cgroup "+h.cgroup), wrapperExit)
}

// recordScript writes RunRoot/<id>/procs/<pid>: the shell's process
// group and start time, for Pause's signals and the heal's kills.
func (h *host) recordScript() string {
	return fmt.Sprintf("{ read -r l < /proc/$$/stat && set -- ${l##*) } && echo \"$3 ${20}\" > %s/procs/$$; } 2>/dev/null || { echo %s >&2; exit %d; }\n",
		q.Quote(runDir(h.testID)), q.Quote(failMark+"cannot record the process under "+runDir(h.testID)), wrapperExit)
}

// userScript is what runs a user's command: into the cgroup, recorded
// when asked, in opts.WorkDir (/ by default), as opts.User with opts.Env
// added, the command exec'd in the shell's place.
//
// started, when not "", is a file the script creates once it is in the
// cgroup and recorded.
func (h *host) userScript(cmd []string, opts nodes.ExecOptions, record bool, started string) (string, error) {
	if len(cmd) == 0 {
		return "", errors.New("no command")
	}
	var b strings.Builder
	b.WriteString(h.joinScript())
	if record {
		b.WriteString(h.recordScript())
	}
	if started != "" {
		fmt.Fprintf(&b, ": > %s\n", q.Quote(started))
	}
	dir := opts.WorkDir
	if dir == "" {
		dir = "/"
	}
	fmt.Fprintf(&b, "cd %s 2>/dev/null || { echo %s >&2; exit %d; }\n", q.Quote(dir), q.Quote(failMark+"no directory "+dir), wrapperExit)
	b.WriteString("exec")
	if opts.User != "" {
		as, err := asUser(opts.User)
		if err != nil {
			return "", err
		}
		b.WriteString(" " + as)
	}
	if len(opts.Env) > 0 {
		b.WriteString(" env")
		for _, kv := range opts.Env {
			if !strings.Contains(kv, "=") || strings.HasPrefix(kv, "=") {
				return "", fmt.Errorf("environment %q: want KEY=VALUE", kv)
			}
			b.WriteString(" " + q.Quote(kv))
		}
	}
	b.WriteString(" " + q.Join(cmd) + "\n")
	return b.String(), nil
}

// asUser is the command that runs the rest as user: "name" or
// "name:group" through runuser, "uid" or "uid:gid" through setpriv.
func asUser(user string) (string, error) {
	name, group, _ := strings.Cut(user, ":")
	if name == "" {
		return "", fmt.Errorf("user %q: want name, name:group, uid or uid:gid", user)
	}
	if _, err := strconv.Atoi(name); err == nil {
		gid := group
		if gid == "" {
			gid = "0"
		}
		if _, err := strconv.Atoi(gid); err != nil {
			return "", fmt.Errorf("user %q: a numeric user wants a numeric group", user)
		}
		return "setpriv --reuid=" + name + " --regid=" + gid + " --clear-groups", nil
	}
	if group != "" {
		return "runuser -u " + q.Quote(name) + " -g " + q.Quote(group) + " --", nil
	}
	return "runuser -u " + q.Quote(name) + " --", nil
}

// wrapperError turns the wrapper's own failure into the driver's error.
func wrapperError(node string, cmd []string, res nodes.ExecResult) error {
	if res.ExitCode != wrapperExit {
		return nil
	}
	for _, line := range strings.Split(res.Stderr, "\n") {
		if msg, ok := strings.CutPrefix(line, failMark); ok {
			return fmt.Errorf("exec %s in %s: %s", quoteCmd(cmd), node, strings.TrimSpace(msg))
		}
	}
	return nil
}

// usable is the host of node, refused while it is paused: on Docker an
// exec into a paused container fails too, and here the command would
// join the frozen cgroup and hang.
func (hs *Hosts) usable(node string) (*host, error) {
	h, err := hs.host(node)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	paused := h.paused
	h.mu.Unlock()
	if paused {
		return nil, fmt.Errorf("%s is paused: unpause it first", node)
	}
	return h, nil
}

// Exec runs cmd as root in / and waits for it.
func (hs *Hosts) Exec(ctx context.Context, node string, cmd []string) (nodes.ExecResult, error) {
	return hs.ExecWith(ctx, node, cmd, nodes.ExecOptions{})
}

// ExecPrivileged is Exec: every command runs as root on the host.
func (hs *Hosts) ExecPrivileged(ctx context.Context, node string, cmd []string) (nodes.ExecResult, error) {
	return hs.ExecWith(ctx, node, cmd, nodes.ExecOptions{Privileged: true})
}

// ExecWith runs cmd with options in the node's cgroup and waits for it.
// When ctx ends the command is sent SIGTERM and the session closed.
func (hs *Hosts) ExecWith(ctx context.Context, node string, cmd []string, opts nodes.ExecOptions) (nodes.ExecResult, error) {
	h, err := hs.usable(node)
	if err != nil {
		return nodes.ExecResult{ExitCode: -1}, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	script, err := h.userScript(cmd, opts, false, "")
	if err != nil {
		return nodes.ExecResult{ExitCode: -1}, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	res, err := h.run(ctx, h.rootLine(script, nil), opts.Stdin)
	if err != nil {
		return res, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	if err := wrapperError(node, cmd, res); err != nil {
		return res, err
	}
	return res, nil
}

// ExecDetached starts cmd in its own session (setsid), its output to
// /dev/null, recorded under RunRoot/<id>/procs/, and returns its pid once
// it is in the node's cgroup and recorded.
func (hs *Hosts) ExecDetached(ctx context.Context, node string, cmd []string, opts nodes.ExecOptions) (string, error) {
	h, err := hs.usable(node)
	if err != nil {
		return "", fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	inner, err := h.userScript(cmd, opts, true, "")
	if err != nil {
		return "", fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	defer h.gate.hold()()
	procs := q.Quote(runDir(h.testID) + "/procs")
	script := fmt.Sprintf(`setsid /bin/sh -c %s </dev/null >/dev/null 2>&1 &
pid=$!
i=0
while [ ! -s %s/$pid ] && kill -0 $pid 2>/dev/null && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
echo $pid
`, q.Quote(inner), procs)
	res, err := h.runRoot(ctx, script, nil)
	if err != nil {
		return "", fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	pid := strings.TrimSpace(res.Stdout)
	if res.ExitCode != 0 || pid == "" {
		return "", fmt.Errorf("exec %s in %s: starting it failed (exit %d): %s", quoteCmd(cmd), node, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return pid, nil
}

// ExecStream starts cmd as root with its standard streams attached.
func (hs *Hosts) ExecStream(ctx context.Context, node string, cmd []string) (*nodes.Stream, error) {
	return hs.ExecStreamWith(ctx, node, cmd, nodes.ExecOptions{})
}

// ExecStreamWith starts cmd with options and its streams attached, in the
// node's cgroup and recorded (so that Pause freezes it and the heal kills
// it); it returns once the command runs there. Close sends it SIGHUP and
// closes the session.
func (hs *Hosts) ExecStreamWith(ctx context.Context, node string, cmd []string, opts nodes.ExecOptions) (*nodes.Stream, error) {
	h, err := hs.usable(node)
	if err != nil {
		return nil, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	// A token the command leaves once it is in the cgroup and recorded:
	// until then a Pause must wait, or it would miss it.
	tok := make([]byte, 8)
	rand.Read(tok)
	started := runDir(h.testID) + "/started-" + hex.EncodeToString(tok)
	inner, err := h.userScript(cmd, opts, true, started)
	if err != nil {
		return nil, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	defer h.gate.hold()()
	s, err := h.session()
	if err != nil {
		return nil, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	stdout, stderr := newBufPipe(), newBufPipe()
	s.Stdout, s.Stderr = stdout, stderr
	if err := s.Start(h.rootLine(inner, nil)); err != nil {
		s.Close()
		return nil, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	done := make(chan struct{})
	var code int
	var waitErr error
	go func() {
		err := s.Wait()
		var exit *ssh.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			code = exit.ExitStatus()
			if exit.Signal() != "" {
				code = 128 + signalNumber(exit.Signal())
			}
		default:
			code, waitErr = -1, err
		}
		stdout.closeWithError(io.EOF)
		stderr.closeWithError(io.EOF)
		close(done)
	}()
	closeSession := func() error {
		s.Signal(ssh.SIGHUP)
		return s.Close()
	}
	stop := context.AfterFunc(ctx, func() { closeSession() })
	// Wait for the token (or the command's early end).
	wait := fmt.Sprintf("i=0; while [ ! -e %[1]s ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; rm -f %[1]s", q.Quote(started))
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	waitRes, werr := h.runRoot(wctx, wait, nil)
	cancel()
	select {
	case <-done:
		// It ended at once: its exit code and stderr say why.
	default:
		if werr != nil || waitRes.ExitCode != 0 {
			stop()
			closeSession()
			return nil, fmt.Errorf("exec %s in %s: waiting for it to start: %v %s", quoteCmd(cmd), node, werr, strings.TrimSpace(waitRes.Stderr))
		}
	}
	return &nodes.Stream{
		Stdin:  stdin,
		Stdout: stdout,
		Stderr: stderr,
		WaitFunc: func() (int, error) {
			<-done
			if ctx.Err() != nil {
				return -1, ctx.Err()
			}
			if waitErr != nil {
				return -1, fmt.Errorf("exec %s in %s: the SSH session: %w", quoteCmd(cmd), node, waitErr)
			}
			return code, nil
		},
		CloseFunc: func() error {
			stop()
			closeSession()
			return nil
		},
	}, nil
}

func quoteCmd(cmd []string) string {
	s := strings.Join(cmd, " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return "`" + s + "`"
}
