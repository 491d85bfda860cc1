package backends

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// LogDir is where servers in the nodes write their logs.
const LogDir = "/var/log/fencecheck"

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// StartDaemon starts cmd in node as a long-running server whose output goes
// to LogDir/name.log, and whose pid is kept in LogDir/name.pid so Kill can
// find it. A fault's environment for the node's servers (the clock faults'
// libfaketime, see nodes.Nodes.SetServerEnv) comes first.
func StartDaemon(ctx context.Context, c nodes.Nodes, node, name string, cmd []string, opts nodes.ExecOptions) error {
	opts.Env = append(c.ServerEnv(node), opts.Env...)
	var q []string
	for _, a := range cmd {
		q = append(q, shellQuote(a))
	}
	script := fmt.Sprintf("mkdir -p %[1]s && echo $$ > %[1]s/%[2]s.pid && exec %[3]s >>%[1]s/%[2]s.log 2>&1", LogDir, name, strings.Join(q, " "))
	_, err := c.ExecDetached(ctx, node, []string{"sh", "-c", script}, opts)
	return err
}

// KillDaemon SIGKILLs the server started as name in node.
func KillDaemon(ctx context.Context, c nodes.Nodes, node, name string) error {
	res, err := c.Exec(ctx, node, []string{"sh", "-c", fmt.Sprintf("kill -9 $(cat %s/%s.pid) 2>/dev/null; true", LogDir, name)})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("killing %s in %s: %s", name, node, res.Stderr)
	}
	return nil
}

// LogTail is the end of a server's log, for error messages: the output
// of the server container when the server runs from the user's image.
func LogTail(ctx context.Context, c nodes.Nodes, node, name string, lines int) string {
	if is, ok := c.(nodes.ImageServers); ok && is.ServerImage() != "" {
		if n, err := c.Node(node); err == nil && n.Role == nodes.RoleServer {
			out, err := is.ImageServerLogs(ctx, node, fmt.Sprint(lines))
			if err != nil {
				return "(log unavailable: " + err.Error() + ")"
			}
			return fmt.Sprintf("(server container %s, %s)\n%s", is.ImageServerName(node), is.ImageServerState(ctx, node), strings.TrimSpace(string(out)))
		}
	}
	res, err := c.Exec(ctx, node, []string{"tail", "-n", fmt.Sprint(lines), fmt.Sprintf("%s/%s.log", LogDir, name)})
	if err != nil {
		return "(log unavailable: " + err.Error() + ")"
	}
	return strings.TrimSpace(res.Stdout)
}

// WaitUntil runs probe (a command in node) until it exits 0 or timeout
// passes; on timeout the error carries the server's log tail.
func WaitUntil(ctx context.Context, c nodes.Nodes, node, name string, probe []string, timeout time.Duration) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		res, err := c.Exec(ctx, node, probe)
		if err == nil && res.ExitCode == 0 {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = strings.TrimSpace(res.Stdout + " " + res.Stderr)
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				// Interrupted, not timed out: no claim about readiness,
				// and no log tail to bury the interrupt under.
				return fmt.Errorf("waiting for %s in %s to become ready: %w", name, node, parent.Err())
			}
			return fmt.Errorf("%s in %s did not become ready within %s (last probe: %s); log tail:\n%s",
				name, node, timeout, last, LogTail(context.WithoutCancel(ctx), c, node, name, 20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// NodeIPs maps each named node to its address on the test network, for
// clients that run on the host (leader discovery).
func NodeIPs(c nodes.Nodes, nodes []string) (map[string]string, error) {
	ips := map[string]string{}
	for _, n := range nodes {
		node, err := c.Node(n)
		if err != nil {
			return nil, err
		}
		ips[n] = node.IP
	}
	return ips, nil
}

// OnEachNode runs fn for every node at once and returns the first error.
func OnEachNode(nodes []string, fn func(i int, node string) error) error {
	errs := make(chan error, len(nodes))
	for i, n := range nodes {
		go func() { errs <- fn(i, n) }()
	}
	var first error
	for range nodes {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// DataRoot holds every server's data in its node (each backend its own
// directory under it).
const DataRoot = "/var/lib/fencecheck"

// BareInstaller is a DB that can run its servers on bare machines
// (nodes.Bare: the user's own hosts over SSH), copying in every program
// they run, and naming its peers by address. OnBare says whether this
// DB's build can (nil) or why not.
type BareInstaller interface {
	OnBare() error
}
