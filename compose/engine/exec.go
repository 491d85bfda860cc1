package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// ExecResult and ExecOptions are nodes'; the names stay here so the
// Docker driver's own code reads as before.
type (
	ExecResult  = nodes.ExecResult
	ExecOptions = nodes.ExecOptions
)

// Exec runs cmd in the node and waits for it. A command that fails is no
// error: its exit code is in the result. Errors are Docker's (the node is
// paused, gone, the daemon unreachable). When ctx ends Exec returns, but
// the command goes on inside the node: Docker cannot kill an exec.
func (c *Cluster) Exec(ctx context.Context, node string, cmd []string) (ExecResult, error) {
	return c.ExecWith(ctx, node, cmd, ExecOptions{})
}

// ExecPrivileged is Exec with every capability, for iptables and tc. Where
// the engine cannot start a privileged exec at all (see
// privilegedExecWorks), the command runs with the container's own
// capabilities, which include NET_ADMIN.
func (c *Cluster) ExecPrivileged(ctx context.Context, node string, cmd []string) (ExecResult, error) {
	return c.ExecWith(ctx, node, cmd, ExecOptions{Privileged: true})
}

// ExecWith is Exec with options.
func (c *Cluster) ExecWith(ctx context.Context, node string, cmd []string, opts ExecOptions) (ExecResult, error) {
	opts.Privileged = opts.Privileged && c.privilegedExecWorks(ctx, node)
	id, resp, err := c.execAttach(ctx, node, cmd, opts, opts.Stdin != nil)
	if err != nil {
		return ExecResult{}, err
	}
	defer resp.Close()
	stop := context.AfterFunc(ctx, resp.Close)
	defer stop()

	if opts.Stdin != nil {
		go func() {
			io.Copy(resp.Conn, opts.Stdin)
			resp.CloseWrite()
		}()
	}
	var stdout, stderr bytes.Buffer
	_, copyErr := stdcopy.StdCopy(&stdout, &stderr, resp.Reader)
	res := ExecResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: -1}
	if ctx.Err() != nil {
		return res, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, ctx.Err())
	}
	if copyErr != nil {
		return res, fmt.Errorf("exec %s in %s: reading its output: %w", quoteCmd(cmd), node, copyErr)
	}
	code, err := c.execExitCode(ctx, id)
	if err != nil {
		return res, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, err)
	}
	res.ExitCode = code
	return res, nil
}

// ExecDetached starts cmd in the node and returns at once with the exec's
// id, for servers that run until killed. Redirect its output to a file
// (sh -c '... >>/var/log/x.log 2>&1'): a detached exec's output is lost.
func (c *Cluster) ExecDetached(ctx context.Context, node string, cmd []string, opts ExecOptions) (string, error) {
	n, err := c.container(node)
	if err != nil {
		return "", err
	}
	opts.Privileged = opts.Privileged && c.privilegedExecWorks(ctx, node)
	defer c.HoldOffPause(node)()
	create, err := c.cli.ContainerExecCreate(ctx, n.ContainerID, execOptions(cmd, opts, false))
	if err != nil {
		return "", fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, DaemonError(c.cli.DaemonHost(), err))
	}
	if err := c.cli.ContainerExecStart(ctx, create.ID, container.ExecStartOptions{Detach: true}); err != nil {
		return "", fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node, DaemonError(c.cli.DaemonHost(), err))
	}
	c.waitStarted(ctx, create.ID)
	return create.ID, nil
}

// waitStarted waits, for at most 10 s, until the daemon reports the exec's
// process started (it has a pid), so that a pause cannot catch it half way
// into the container.
func (c *Cluster) waitStarted(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	delay := 2 * time.Millisecond
	for {
		info, err := c.cli.ContainerExecInspect(ctx, id)
		if err != nil || info.Pid != 0 || info.ExitCode != 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// ExecState tells whether an exec (from ExecDetached or a Stream) still
// runs, its process id as the host sees it, and its exit code once ended.
func (c *Cluster) ExecState(ctx context.Context, execID string) (running bool, exitCode, hostPID int, err error) {
	info, err := c.cli.ContainerExecInspect(ctx, execID)
	if err != nil {
		return false, 0, 0, err
	}
	return info.Running, info.ExitCode, info.Pid, nil
}

// privilegedExecWorks finds out, once per cluster, whether the engine can
// start a privileged exec. Where the host's own capability bounding set
// lacks a capability (CAP_SYS_RESOURCE on some sandboxed hosts), runc fails
// every privileged exec with "unable to apply caps" before the command runs.
// The commands then run with the container's capabilities, which include
// NET_ADMIN: enough for iptables and tc.
func (c *Cluster) privilegedExecWorks(ctx context.Context, node string) bool {
	c.privMu.Lock()
	defer c.privMu.Unlock()
	if c.privKnown {
		return c.privOK
	}
	id, resp, err := c.execAttach(ctx, node, []string{"true"}, ExecOptions{Privileged: true}, false)
	if err != nil {
		return true // the node is paused or gone: let the real command say so
	}
	var out bytes.Buffer
	stdcopy.StdCopy(&out, &out, resp.Reader)
	resp.Close()
	code, err := c.execExitCode(ctx, id)
	switch {
	case err != nil:
		return true
	case code == 0:
		c.privKnown, c.privOK = true, true
	case strings.Contains(out.String(), "unable to apply caps"):
		c.privKnown, c.privOK = true, false
	}
	return c.privOK || !c.privKnown
}

func execOptions(cmd []string, opts ExecOptions, attach bool) container.ExecOptions {
	return container.ExecOptions{
		Cmd:          cmd,
		User:         opts.User,
		Env:          opts.Env,
		WorkingDir:   opts.WorkDir,
		Privileged:   opts.Privileged,
		AttachStdout: attach,
		AttachStderr: attach,
		Detach:       !attach,
	}
}

func (c *Cluster) execAttach(ctx context.Context, node string, cmd []string, opts ExecOptions, stdin bool) (string, types.HijackedResponse, error) {
	n, err := c.container(node)
	if err != nil {
		return "", types.HijackedResponse{}, err
	}
	eo := execOptions(cmd, opts, true)
	eo.AttachStdin = stdin
	defer c.HoldOffPause(node)()
	began := time.Now()
	create, err := c.cli.ContainerExecCreate(ctx, n.ContainerID, eo)
	if err != nil {
		return "", types.HijackedResponse{}, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node,
			askError(c.cli.DaemonHost(), "the creation of an exec in "+node, began, err))
	}
	began = time.Now()
	resp, err := c.cli.ContainerExecAttach(ctx, create.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", types.HijackedResponse{}, fmt.Errorf("exec %s in %s: %w", quoteCmd(cmd), node,
			askError(c.cli.DaemonHost(), "the start of an exec in "+node, began, err))
	}
	c.waitStarted(ctx, create.ID)
	return create.ID, resp, nil
}

// execExitCode waits for the exec to be reported ended (the stream can close
// a moment before) and returns its exit code.
func (c *Cluster) execExitCode(ctx context.Context, id string) (int, error) {
	delay := 5 * time.Millisecond
	for {
		info, err := c.cli.ContainerExecInspect(ctx, id)
		if err != nil {
			return -1, err
		}
		if !info.Running {
			return info.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// stream is a command running in a node with its standard streams open,
// behind a nodes.Stream. Close drops the connection but, Docker having no
// way to kill an exec, not the command itself.
type stream struct {
	execID string
	c      *Cluster
	ctx    context.Context
	resp   types.HijackedResponse
	done   chan struct{}
	err    error // the copy's, set before done closes
	stop   func() bool
	closed sync.Once
}

// ExecStream starts cmd in the node with stdin, stdout and stderr attached.
func (c *Cluster) ExecStream(ctx context.Context, node string, cmd []string) (*nodes.Stream, error) {
	return c.ExecStreamWith(ctx, node, cmd, ExecOptions{})
}

// ExecStreamWith is ExecStream with options (Stdin in opts is ignored).
func (c *Cluster) ExecStreamWith(ctx context.Context, node string, cmd []string, opts ExecOptions) (*nodes.Stream, error) {
	opts.Privileged = opts.Privileged && c.privilegedExecWorks(ctx, node)
	id, resp, err := c.execAttach(ctx, node, cmd, opts, true)
	if err != nil {
		return nil, err
	}
	stdout, stderr := newBufPipe(), newBufPipe()
	s := &stream{
		execID: id,
		c:      c,
		ctx:    ctx,
		resp:   resp,
		done:   make(chan struct{}),
	}
	s.stop = context.AfterFunc(ctx, s.closeConn)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, resp.Reader)
		s.err = err
		if err == nil {
			err = io.EOF
		}
		stdout.closeWithError(err)
		stderr.closeWithError(err)
		close(s.done)
	}()
	return &nodes.Stream{
		Stdin:     stdinWriter{resp},
		Stdout:    stdout,
		Stderr:    stderr,
		WaitFunc:  s.wait,
		CloseFunc: s.close,
	}, nil
}

// wait waits for the command's output to end and returns its exit code.
func (s *stream) wait() (int, error) {
	<-s.done
	if s.ctx.Err() != nil {
		return -1, s.ctx.Err()
	}
	if s.err != nil {
		return -1, s.err
	}
	return s.c.execExitCode(s.ctx, s.execID)
}

// close drops the connection to the command; its readers then see EOF.
func (s *stream) close() error {
	s.stop()
	s.closeConn()
	return nil
}

func (s *stream) closeConn() { s.closed.Do(s.resp.Close) }

type stdinWriter struct{ resp types.HijackedResponse }

func (w stdinWriter) Write(p []byte) (int, error) { return w.resp.Conn.Write(p) }
func (w stdinWriter) Close() error                { return w.resp.CloseWrite() }

// bufPipe is a pipe whose writer never blocks: what is not read yet is
// kept in memory.
type bufPipe struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  bytes.Buffer
	err  error
}

func newBufPipe() *bufPipe {
	p := &bufPipe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *bufPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return 0, io.ErrClosedPipe
	}
	p.buf.Write(b)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *bufPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.buf.Len() == 0 && p.err == nil {
		p.cond.Wait()
	}
	if p.buf.Len() > 0 {
		return p.buf.Read(b)
	}
	return 0, p.err
}

func (p *bufPipe) closeWithError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
}

func quoteCmd(cmd []string) string {
	s := strings.Join(cmd, " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return "`" + s + "`"
}
