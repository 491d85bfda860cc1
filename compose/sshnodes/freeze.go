package sshnodes

import (
	"context"
	"fmt"
	"strings"

	q "github.com/fencecheck/fencecheck/internal/shellquote"
)

// Freezers in use on a host (host.freezer).
const (
	freezeCgroup2 = "cgroup2" // cgroup.freeze in the test's cgroup v2 directory
	freezeCgroup1 = "cgroup1" // freezer.state in the test's v1 freezer cgroup
	freezeSignal  = "signal"  // SIGSTOP/SIGCONT to each recorded process group
)

// Freezer says how node is frozen: "cgroup2", "cgroup1" (the cgroup
// freezer, every process fencecheck started there at once) or "signal"
// (SIGSTOP to each process group fencecheck started there).
func (hs *Hosts) Freezer(node string) (string, error) {
	h, err := hs.host(node)
	if err != nil {
		return "", err
	}
	return h.freezer, nil
}

// Pause freezes every process fencecheck started on the node's host, and
// every command it runs there until Unpause is refused (as an exec into a
// paused container is). It waits for starts going on (HoldOffPause).
func (hs *Hosts) Pause(ctx context.Context, node string) error {
	h, err := hs.host(node)
	if err != nil {
		return err
	}
	return h.gate.pause(func() error {
		res, err := h.runRoot(ctx, h.freezeScript(true), nil)
		if err != nil {
			return fmt.Errorf("pausing %s: %w", node, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("pausing %s: %s (exit %d)", node, strings.TrimSpace(res.Stderr), res.ExitCode)
		}
		h.mu.Lock()
		h.paused = true
		h.mu.Unlock()
		return nil
	})
}

// Unpause thaws the node; thawing a running node does nothing.
func (hs *Hosts) Unpause(ctx context.Context, node string) error {
	h, err := hs.host(node)
	if err != nil {
		return err
	}
	res, err := h.runRoot(ctx, h.freezeScript(false), nil)
	if err != nil {
		return fmt.Errorf("resuming %s: %w", node, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("resuming %s: %s (exit %d)", node, strings.TrimSpace(res.Stderr), res.ExitCode)
	}
	h.mu.Lock()
	h.paused = false
	h.mu.Unlock()
	return nil
}

// Paused reports whether anything of the test is frozen on the node's
// host now, as the host tells: the cgroup's state, or a recorded process
// stopped.
func (hs *Hosts) Paused(ctx context.Context, node string) (bool, error) {
	h, err := hs.host(node)
	if err != nil {
		return false, err
	}
	res, err := h.runRoot(ctx, h.pausedScript(), nil)
	if err != nil {
		return false, fmt.Errorf("asking whether %s is paused: %w", node, err)
	}
	switch strings.TrimSpace(res.Stdout) {
	case "paused":
		return true, nil
	case "running":
		return false, nil
	}
	return false, fmt.Errorf("asking whether %s is paused: %s (exit %d)", node, strings.TrimSpace(res.Stderr+res.Stdout), res.ExitCode)
}

// HoldOffPause keeps Pause of node waiting until release is called.
func (hs *Hosts) HoldOffPause(node string) (release func()) {
	h, err := hs.host(node)
	if err != nil {
		return func() {}
	}
	return h.gate.hold()
}

// eachRecorded is a loop over the recorded processes that are still the
// ones recorded (same start time), with $pid and $pgid set for body.
func (h *host) eachRecorded(body string) string {
	return fmt.Sprintf(`for f in %s/procs/*; do
  [ -f "$f" ] || continue
  pid=${f##*/}
  read -r pgid start < "$f" || continue
  read -r l 2>/dev/null < /proc/"$pid"/stat || continue
  set -- ${l##*) }
  [ "${20}" = "$start" ] || continue
  state=$1
  %s
done
`, q.Quote(runDir(h.testID)), body)
}

// freezeScript freezes (freeze) or thaws the host's processes of the
// test, and waits until the freezer says it is done.
func (h *host) freezeScript(freeze bool) string {
	cg := q.Quote(h.cgroup)
	switch h.freezer {
	case freezeCgroup2:
		v, want := "0", "frozen 0"
		if freeze {
			v, want = "1", "frozen 1"
		}
		return fmt.Sprintf(`echo %[2]s > %[1]s/cgroup.freeze || exit 1
i=0
until grep -qx %[3]s %[1]s/cgroup.events; do
  i=$((i+1)); [ $i -gt 1000 ] && { echo "the cgroup is not %[4]s after 10 s" >&2; exit 1; }
  sleep 0.01
done
`, cg, v, q.Quote(want), map[bool]string{true: "frozen", false: "thawed"}[freeze])
	case freezeCgroup1:
		want := "THAWED"
		if freeze {
			want = "FROZEN"
		}
		return fmt.Sprintf(`echo %[2]s > %[1]s/freezer.state || exit 1
i=0
until [ "$(cat %[1]s/freezer.state)" = %[2]s ]; do
  i=$((i+1)); [ $i -gt 1000 ] && { echo "the freezer is not %[2]s after 10 s" >&2; exit 1; }
  echo %[2]s > %[1]s/freezer.state; sleep 0.01
done
`, cg, want)
	}
	sig := "CONT"
	if freeze {
		sig = "STOP"
	}
	// SIGSTOP to each process group, then wait until each recorded
	// process is seen stopped, stopping again any not yet seen so (one
	// run in six saw a process left running after the first signal; the
	// cause is not known, and a second signal costs nothing).
	script := h.eachRecorded(fmt.Sprintf(`kill -%s -"$pgid" "$pid" 2>/dev/null`, sig))
	if freeze {
		script += `i=0
while :; do
  left=""
` + h.eachRecorded(`[ "$state" = T ] || [ "$state" = t ] || [ "$state" = Z ] || { left="$left $pid:$state"; kill -STOP -"$pgid" "$pid" 2>/dev/null; }`) + `  [ -z "$left" ] && break
  i=$((i+1)); [ $i -gt 1000 ] && { echo "not stopped after 10 s (pid:state):$left" >&2; exit 1; }
  sleep 0.01
done
`
	}
	return script
}

// pausedScript prints paused or running.
func (h *host) pausedScript() string {
	cg := q.Quote(h.cgroup)
	switch h.freezer {
	case freezeCgroup2:
		return fmt.Sprintf(`if [ ! -d %[1]s ]; then echo running; elif grep -qx 'frozen 1' %[1]s/cgroup.events || grep -qx 1 %[1]s/cgroup.freeze; then echo paused; else echo running; fi`, cg)
	case freezeCgroup1:
		return fmt.Sprintf(`if [ ! -d %[1]s ]; then echo running; else case "$(cat %[1]s/freezer.state)" in THAWED) echo running;; *) echo paused;; esac; fi`, cg)
	}
	return "stopped=0\n" + h.eachRecorded(`[ "$state" = T ] && stopped=1`) + `if [ $stopped = 1 ]; then echo paused; else echo running; fi`
}
