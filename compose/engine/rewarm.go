package engine

import (
	"context"
	"fmt"
	"strings"

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
	for _, n := range c.Containers {
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
	errs := make([]error, len(c.Containers))
	done := make(chan struct{})
	for i, n := range c.Containers {
		go func() {
			defer func() { done <- struct{}{} }()
			errs[i] = c.rewarmNode(ctx, n.Name, dirs)
		}()
	}
	for range c.Containers {
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
// init and `sleep infinity`), waits until none is left, and empties dirs,
// all in one exec: each docker exec costs the engine about 0.15 s of CPU
// (runc, the shim, dockerd), and the three a node used to take (kill, ps
// until clean, empty) were two fifths of a warm run's execs — the CPU
// that runs side by side share (docs/benchmarks.md, "Runs side by side").
func (c *Cluster) rewarmNode(ctx context.Context, node string, dirs []string) error {
	res, err := c.Exec(ctx, node, []string{"sh", "-c", rewarmScript(dirs)})
	if err != nil {
		return fmt.Errorf("%s: %w", node, err)
	}
	switch res.ExitCode {
	case 0:
		return nil
	case rewarmSurvivors:
		return fmt.Errorf("%s: processes of the last run survived SIGKILL: %s", node, strings.Join(survivors(res.Stdout), "; "))
	case rewarmNotEmptied:
		return fmt.Errorf("%s: emptying %s: %s", node, strings.Join(dirs, ", "), strings.TrimSpace(res.Stderr))
	default:
		return fmt.Errorf("%s: exit %d: %s", node, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
}

// The rewarm script's exits other than 0: processes survived (their ps
// lines on stdout), or a dir could not be emptied.
const (
	rewarmSurvivors  = 3
	rewarmNotEmptied = 4
)

// rewarmScript is rewarmNode's shell script (POSIX sh, the node image's
// dash): SIGKILL to every process but the init (pid 1), `sleep infinity`
// and the script's own, then /proc read every 100 ms for 5 s until only
// those and zombies the init has yet to reap are left, then dirs emptied.
// Its own are itself and its children (the command substitutions' forks):
// their parent is the script. On survivors it prints them as
// `ps -o pid=,stat=,args=` would, for survivors(), and exits
// rewarmSurvivors.
func rewarmScript(dirs []string) string {
	var script strings.Builder
	script.WriteString(`self=$$
others() {
  left=
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    case $pid in 1|$self) continue ;; esac
    st=$(cat "$p/stat" 2>/dev/null) || continue
    [ -n "$st" ] || continue
    set -- ${st##*) }
    [ "$2" = "$self" ] && continue
    [ "$1" = Z ] && continue
    args=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
    [ "$args" = "sleep infinity " ] && continue
    left="$left$pid $1 $args
"
  done
}
others
for pid in $(printf '%s' "$left" | cut -d' ' -f1); do kill -9 "$pid" 2>/dev/null; done
tries=0
while others; [ -n "$left" ]; do
  tries=$((tries+1))
  if [ $tries -ge 50 ]; then printf '%s' "$left"; exit 3; fi
  sleep 0.1
done
`)
	for _, d := range dirs {
		fmt.Fprintf(&script, "if [ -d %[1]s ]; then find %[1]s -mindepth 1 -delete >&2 || exit 4; [ -z \"$(ls -A %[1]s)\" ] || { echo %[1]s still holds files >&2; exit 4; }; fi\n", shellquote.Quote(d))
	}
	return script.String()
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
