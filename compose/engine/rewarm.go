package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/shellquote"
)

// Rewarm readies a cluster that a finished run leaves up for the next run,
// so that the next run sees what it would on new containers: every node
// running and thawed; every process a run started in it killed (the
// servers, the storage, the agents and client programs, whatever a holder
// killed mid-section left); dirs emptied in every node (the servers' data
// and logs), so the next run starts its servers from nothing; no server
// environment left from a fault. It fails, naming what it found, when a
// node is gone or something survives; the caller then starts a fresh
// cluster. It must never be used on a cluster a run is still using.
func (c *Cluster) Rewarm(ctx context.Context, dirs []string) error {
	for _, n := range c.Nodes {
		if err := c.waitRunning(ctx, n); err != nil {
			return fmt.Errorf("%s is not running: %w", n.Name, err)
		}
		paused, err := c.Paused(ctx, n.Name)
		if err != nil {
			return err
		}
		if paused {
			if err := c.Unpause(ctx, n.Name); err != nil {
				return fmt.Errorf("%s is still frozen: %w", n.Name, err)
			}
		}
	}
	errs := make([]error, len(c.Nodes))
	done := make(chan struct{})
	for i, n := range c.Nodes {
		go func() {
			defer func() { done <- struct{}{} }()
			errs[i] = c.rewarmNode(ctx, n.Name, dirs)
		}()
	}
	for range c.Nodes {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	c.startMu.Lock()
	c.serverEnv = nil
	c.startMu.Unlock()
	return nil
}

// rewarmNode kills every process of node but the container's own (its
// init and `sleep infinity`), waits until none is left, and empties dirs.
func (c *Cluster) rewarmNode(ctx context.Context, node string, dirs []string) error {
	kill := `self=$$
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  case $pid in 1|$self) continue ;; esac
  [ "$(tr '\0' ' ' <$p/cmdline 2>/dev/null)" = "sleep infinity " ] && continue
  kill -9 "$pid" 2>/dev/null
done
true`
	if _, err := c.execOK(ctx, node, "sh", "-c", kill); err != nil {
		return err
	}
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		// ps itself, not through sh: a shell would be one more process.
		out, err := c.execOK(ctx, node, "ps", "-e", "-o", "pid=,stat=,args=")
		if err != nil {
			return err
		}
		left = survivors(out)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: processes of the last run survived SIGKILL: %s", node, strings.Join(left, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	var script strings.Builder
	for _, d := range dirs {
		fmt.Fprintf(&script, "if [ -d %[1]s ]; then find %[1]s -mindepth 1 -delete || exit 1; [ -z \"$(ls -A %[1]s)\" ] || exit 1; fi\n", shellquote.Quote(d))
	}
	if _, err := c.execOK(ctx, node, "sh", "-c", script.String()); err != nil {
		return fmt.Errorf("emptying %s: %w", strings.Join(dirs, ", "), err)
	}
	return nil
}

// survivors are the processes of ps's output (pid, state, command) other
// than the container's init, its `sleep infinity`, ps itself and zombies
// waiting for the init to reap them.
func survivors(ps string) []string {
	var left []string
	for _, line := range strings.Split(strings.TrimSpace(ps), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		args := strings.Join(f[2:], " ")
		switch {
		case f[0] == "1", strings.HasPrefix(f[1], "Z"), args == "sleep infinity", strings.HasPrefix(args, "ps -e -o"):
			continue
		}
		left = append(left, fmt.Sprintf("pid %s %s", f[0], args))
	}
	return left
}

// execOK runs argv in node and returns its stdout; a non-zero exit is an
// error carrying stderr.
func (c *Cluster) execOK(ctx context.Context, node string, argv ...string) (string, error) {
	res, err := c.Exec(ctx, node, argv)
	if err != nil {
		return "", fmt.Errorf("%s: %w", node, err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("%s: exit %d: %s", node, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return res.Stdout, nil
}
