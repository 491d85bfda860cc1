package sshnodes

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/fencecheck/fencecheck/compose/nodes"
	q "github.com/fencecheck/fencecheck/internal/shellquote"
)

var _ nodes.Nodes = (*Hosts)(nil)

// RunRoot is where each host keeps a test's records: RunRoot/<test id>/
// holds heal.sh, the pid of every process fencecheck started (procs/) and
// the watchdog's.
const RunRoot = "/run/fencecheck"

// DefaultWatchdog is how long a host waits for the harness before it
// heals itself, when Options leave it out.
const DefaultWatchdog = time.Hour

// Options tune Open.
type Options struct {
	// Watchdog is how long after Open each host heals itself (heal.sh)
	// unless Down comes first: the test's length and a margin. Zero is
	// DefaultWatchdog.
	Watchdog time.Duration
}

// Hosts are the machines of one test, reached over SSH: the SSH driver
// of nodes.Nodes.
type Hosts struct {
	id    string
	inv   *Inventory
	hosts []*host // in the inventory's order: servers, storage, clients

	envMu     sync.Mutex
	serverEnv map[string][]string

	downMu sync.Mutex
	down   bool
}

// host is one machine and its connection.
type host struct {
	Host
	node   nodes.Node
	testID string
	inv    *Inventory // for a new login when the connection broke

	mu     sync.Mutex
	client *ssh.Client

	root    bool   // logged in as root: no sudo
	arch    string // uname -m as Go spells it
	control string // the control machine's address as the host sees it
	// freezer is "cgroup2", "cgroup1" or "signal"; cgroup is the test's
	// cgroup of the node for the first two.
	freezer string
	cgroup  string
	systemd bool // systemd runs the host: the watchdog is a transient timer

	gate   startGate
	paused bool // Pause succeeded and no Unpause since
	healed bool // Down healed it
}

// validID is what a test id may hold: it names directories, a cgroup, an
// iptables chain and a systemd unit on the hosts.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Open logs in to every host of inv at once and readies each for the
// test testID: its directory under RunRoot, its cgroup (where one is
// writable), its heal script, and the watchdog that runs that script
// after opts.Watchdog unless Down comes first. A host that cannot be
// reached, or where the login is neither root nor allowed `sudo -n`, is
// named in the error, and nothing is left on any host.
func Open(ctx context.Context, inv *Inventory, testID string, opts Options) (*Hosts, error) {
	if !validID.MatchString(testID) {
		return nil, fmt.Errorf("test id %q: want letters, digits, '.', '_' and '-', at most 64, from a letter or digit", testID)
	}
	if inv == nil || len(inv.Hosts) == 0 {
		return nil, errors.New("no hosts: the inventory lists none")
	}
	if opts.Watchdog <= 0 {
		opts.Watchdog = DefaultWatchdog
	}
	clients, err := dialAll(ctx, inv)
	if err != nil {
		return nil, err
	}
	hs := &Hosts{id: testID, inv: inv, serverEnv: map[string][]string{}}
	for i, h := range inv.Hosts {
		hs.hosts = append(hs.hosts, &host{
			Host:   h,
			node:   nodes.Node{Name: h.Name, IP: h.Peer, Role: h.Role},
			testID: testID,
			inv:    inv,
			client: clients[i],
		})
	}
	errs := hs.each(func(h *host) error { return h.prepare(ctx, opts.Watchdog) })
	if err := errors.Join(errs...); err != nil {
		// Leave nothing: heal what was prepared, then close.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		hs.each(func(h *host) error { return h.heal(cctx) })
		hs.closeAll()
		return nil, err
	}
	return hs, nil
}

// each runs f on every host at once and returns the errors, nil ones
// left out.
func (hs *Hosts) each(f func(h *host) error) []error {
	errs := make([]error, len(hs.hosts))
	var wg sync.WaitGroup
	for i, h := range hs.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(h)
		}()
	}
	wg.Wait()
	var out []error
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

func (hs *Hosts) closeAll() {
	for _, h := range hs.hosts {
		h.mu.Lock()
		if h.client != nil {
			h.client.Close()
		}
		h.mu.Unlock()
	}
}

// ID is the test's id.
func (hs *Hosts) ID() string { return hs.id }

// Inventory is the inventory the hosts were opened from.
func (hs *Hosts) Inventory() *Inventory { return hs.inv }

// Node names one machine.
func (hs *Hosts) Node(name string) (nodes.Node, error) {
	h, err := hs.host(name)
	if err != nil {
		return nodes.Node{}, err
	}
	return h.node, nil
}

// All lists the machines: servers, storage, clients.
func (hs *Hosts) All() []nodes.Node {
	out := make([]nodes.Node, len(hs.hosts))
	for i, h := range hs.hosts {
		out[i] = h.node
	}
	return out
}

func (hs *Hosts) host(name string) (*host, error) {
	for _, h := range hs.hosts {
		if h.Name == name {
			return h, nil
		}
	}
	var names []string
	for _, h := range hs.hosts {
		names = append(names, h.Name)
	}
	return nil, fmt.Errorf("no node %q among the hosts (%s)", name, strings.Join(names, ", "))
}

// Arch is the servers' architecture as Go spells it, read with uname -m
// at Open; servers of two architectures are an error.
func (hs *Hosts) Arch(ctx context.Context) (string, error) {
	arch := ""
	for _, h := range hs.hosts {
		if h.Role != nodes.RoleServer {
			continue
		}
		if arch != "" && h.arch != arch {
			return "", fmt.Errorf("the servers differ in architecture (%s is %s, another %s): one compiled server cannot run on both", h.Name, h.arch, arch)
		}
		arch = h.arch
	}
	if arch == "" {
		return "", errors.New("no server host to read the architecture of")
	}
	return arch, nil
}

// ControlAddress is the control machine's address as node's host sees
// it: the first rule of the partition chain accepts it.
func (hs *Hosts) ControlAddress(node string) (string, error) {
	h, err := hs.host(node)
	if err != nil {
		return "", err
	}
	return h.control, nil
}

// SetServerEnv sets the environment node's server is started with.
func (hs *Hosts) SetServerEnv(node string, env []string) {
	hs.envMu.Lock()
	defer hs.envMu.Unlock()
	hs.serverEnv[node] = append([]string(nil), env...)
}

// ServerEnv is what SetServerEnv set.
func (hs *Hosts) ServerEnv(node string) []string {
	hs.envMu.Lock()
	defer hs.envMu.Unlock()
	return append([]string(nil), hs.serverEnv[node]...)
}

// Down heals every host (heal.sh: the watchdog cancelled, every process
// of the test killed, its cgroup thawed and removed, the partition chain
// flushed and removed, the test's directory removed) and closes the
// connections. A host that cannot be reached is named and tried again by
// the next Down; one already healed is not touched again.
func (hs *Hosts) Down(ctx context.Context) error {
	hs.downMu.Lock()
	defer hs.downMu.Unlock()
	if hs.down {
		return nil
	}
	errs := hs.each(func(h *host) error {
		h.mu.Lock()
		done := h.healed
		h.mu.Unlock()
		if done {
			return nil
		}
		if err := h.heal(ctx); err != nil {
			return err
		}
		h.mu.Lock()
		h.healed = true
		h.mu.Unlock()
		return nil
	})
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	hs.down = true
	hs.closeAll()
	return nil
}

// runDir is the test's directory on every host.
func runDir(testID string) string { return RunRoot + "/" + testID }

// ChainName is the test's iptables chain: fencecheck-<id>, or, where that
// is past iptables' 28 characters, fencecheck- and a hash of the id.
func ChainName(testID string) string {
	name := "fencecheck-" + testID
	if len(name) <= 28 {
		return name
	}
	sum := sha256.Sum256([]byte(testID))
	return "fencecheck-" + hex.EncodeToString(sum[:])[:17]
}

// watchdogUnit is the transient systemd unit of the test's watchdog.
func watchdogUnit(testID string) string { return "fencecheck-watchdog-" + testID }

// cgroupName is the test's cgroup directory under a hierarchy's root.
func cgroupName(testID string) string { return "fencecheck-" + testID }

// prepare probes the host and readies it: its directory, its cgroup, its
// heal script and its watchdog.
func (h *host) prepare(ctx context.Context, watchdog time.Duration) error {
	// Who the login is, and the address the host sees the control
	// machine at, as the login's own shell knows them.
	res, err := h.run(ctx, `id -u; printf '%s\n' "${SSH_CONNECTION:-}"`, nil)
	if err != nil {
		return err
	}
	lines := strings.Split(res.Stdout, "\n")
	if res.ExitCode != 0 || len(lines) < 2 {
		return fmt.Errorf("%s: `id -u` failed (exit %d): %s", h.label(), res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	h.root = strings.TrimSpace(lines[0]) == "0"
	if f := strings.Fields(lines[1]); len(f) >= 1 {
		h.control = f[0]
	}
	if h.control == "" {
		// No SSH_CONNECTION (a restricted shell): the address this end
		// of the connection has is the best guess.
		if a, ok := h.client.LocalAddr().(*net.TCPAddr); ok {
			h.control = a.IP.String()
		}
	}
	res, err = h.runRoot(ctx, probeScript(h.testID, h.Name, h.Freezer), nil)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		if !h.root && strings.Contains(res.Stderr, "sudo") {
			return fmt.Errorf("%s: %s is not root and `sudo -n` refuses (%s): log in as root, or give %s password-less sudo",
				h.label(), h.User, strings.TrimSpace(res.Stderr), h.User)
		}
		return fmt.Errorf("%s: readying the host failed (exit %d): %s", h.label(), res.ExitCode, strings.TrimSpace(res.Stderr+res.Stdout))
	}
	facts := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			facts[k] = v
		}
	}
	h.arch = goArch(facts["arch"])
	h.systemd = facts["systemd"] == "1"
	if kind, dir, ok := strings.Cut(facts["freezer"], ":"); ok {
		h.freezer, h.cgroup = kind, dir
	} else {
		h.freezer = "signal"
	}
	// The heal script, then the watchdog that runs it.
	script := healScript(h.testID, h.freezer, h.cgroup)
	if err := h.copyTo(ctx, runDir(h.testID)+"/heal.sh", []byte(script), 0o700); err != nil {
		return err
	}
	res, err = h.runRoot(ctx, watchdogScript(h.testID, h.systemd, watchdog), nil)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s: starting the watchdog failed (exit %d): %s", h.label(), res.ExitCode, strings.TrimSpace(res.Stderr+res.Stdout))
	}
	return nil
}

// probeScript makes the test's directory and cgroup and prints what the
// host is: arch=, freezer=kind:dir or signal, systemd=1.
func probeScript(testID, node, freezer string) string {
	d := q.Quote(runDir(testID))
	cg := q.Quote(cgroupName(testID) + "/" + node)
	var b strings.Builder
	fmt.Fprintf(&b, "mkdir -p %s/procs || exit 1\n", d)
	b.WriteString("echo \"arch=$(uname -m)\"\n")
	b.WriteString("fz=signal\n")
	if freezer != FreezerSignal {
		fmt.Fprintf(&b, `for root in /sys/fs/cgroup /sys/fs/cgroup/unified; do
  if [ "$(stat -fc %%T "$root" 2>/dev/null)" = cgroup2fs ] && mkdir -p "$root"/%[1]s 2>/dev/null; then
    if [ -e "$root"/%[1]s/cgroup.freeze ]; then fz="cgroup2:$root/"%[1]s; break; fi
    rmdir "$root"/%[1]s "$root"/%[2]s 2>/dev/null
  fi
done
if [ "$fz" = signal ] && [ "$(stat -fc %%T /sys/fs/cgroup/freezer 2>/dev/null)" = cgroupfs ] && mkdir -p /sys/fs/cgroup/freezer/%[1]s 2>/dev/null; then
  if [ -e /sys/fs/cgroup/freezer/%[1]s/freezer.state ]; then fz=cgroup1:/sys/fs/cgroup/freezer/%[1]s
  else rmdir /sys/fs/cgroup/freezer/%[1]s /sys/fs/cgroup/freezer/%[2]s 2>/dev/null; fi
fi
`, cg, q.Quote(cgroupName(testID)))
	}
	b.WriteString("echo \"freezer=$fz\"\n")
	b.WriteString("if [ -d /run/systemd/system ] && command -v systemd-run >/dev/null 2>&1; then echo systemd=1; fi\n")
	return b.String()
}

// healScript is RunRoot/<id>/heal.sh: it leaves the host as fencecheck
// found it. With the argument "down" (Down) it first cancels the
// watchdog; the watchdog runs it without. Every step is idempotent, and
// it touches only what the test made: the processes recorded in procs/
// (each checked against its recorded start time, so a reused pid is
// left alone), the test's cgroup, its own iptables chain and directory.
func healScript(testID, freezer, cgroup string) string {
	d := q.Quote(runDir(testID))
	chain := ChainName(testID)
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# fencecheck: heals this host after test %s (written by compose/sshnodes).\n", testID)
	b.WriteString("D=" + d + "\n")
	b.WriteString("if [ \"${1:-}\" = down ]; then\n" + cancelWatchdogScript + "fi\n")
	switch freezer {
	case "cgroup2":
		fmt.Fprintf(&b, "CG=%s\n[ -d \"$CG\" ] && echo 0 > \"$CG/cgroup.freeze\"\n", q.Quote(cgroup))
	case "cgroup1":
		fmt.Fprintf(&b, "CG=%s\n[ -d \"$CG\" ] && echo THAWED > \"$CG/freezer.state\"\n", q.Quote(cgroup))
	default:
		b.WriteString("CG=\n")
	}
	// The recorded processes: each file procs/<pid> holds its process
	// group and its start time (field 22 of /proc/<pid>/stat).
	b.WriteString(`for f in "$D"/procs/*; do
  [ -f "$f" ] || continue
  pid=${f##*/}
  read -r pgid start < "$f" || continue
  if read -r l 2>/dev/null < /proc/"$pid"/stat; then
    set -- ${l##*) }
    if [ "${20}" = "$start" ]; then
      kill -CONT -"$pgid" 2>/dev/null; kill -KILL -"$pgid" "$pid" 2>/dev/null
    fi
  fi
done
if [ -n "$CG" ] && [ -d "$CG" ]; then
  i=0
  while [ $i -lt 100 ]; do
    pids=$(cat "$CG/cgroup.procs" 2>/dev/null)
    [ -z "$pids" ] && break
    kill -KILL $pids 2>/dev/null
    sleep 0.1; i=$((i+1))
  done
  rmdir "$CG" 2>/dev/null; rmdir "${CG%/*}" 2>/dev/null
fi
`)
	fmt.Fprintf(&b, `if command -v iptables >/dev/null 2>&1; then
  while iptables -w -D INPUT -j %[1]s 2>/dev/null; do :; done
  if iptables -w -S %[1]s >/dev/null 2>&1; then iptables -w -F %[1]s; iptables -w -X %[1]s; fi
fi
rm -rf "$D"
rmdir %[2]s 2>/dev/null
exit 0
`, chain, RunRoot)
	return b.String()
}

// cancelWatchdogScript stops the watchdog whose unit or pid $D records.
const cancelWatchdogScript = `if [ -f "$D/watchdog.unit" ]; then
  u=$(cat "$D/watchdog.unit")
  systemctl stop "$u.timer" "$u.service" 2>/dev/null; systemctl reset-failed "$u.service" 2>/dev/null
  rm -f "$D/watchdog.unit"
fi
if [ -f "$D/watchdog.pid" ]; then
  wd=$(cat "$D/watchdog.pid"); kill -KILL -"$wd" "$wd" 2>/dev/null
  rm -f "$D/watchdog.pid"
fi
`

// ResetWatchdog re-arms every host's watchdog to fire limit from now: a
// run that goes on longer than Open's limit pushes it on, so that no
// host heals itself under a harness that is still there.
func (hs *Hosts) ResetWatchdog(ctx context.Context, limit time.Duration) error {
	return errors.Join(hs.each(func(h *host) error {
		script := "D=" + q.Quote(runDir(h.testID)) + "\n" + cancelWatchdogScript + watchdogScript(h.testID, h.systemd, limit)
		res, err := h.runRoot(ctx, script, nil)
		if err != nil {
			return fmt.Errorf("re-arming the watchdog of %s: %w", h.label(), err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("re-arming the watchdog of %s: exit %d: %s", h.label(), res.ExitCode, strings.TrimSpace(res.Stderr))
		}
		return nil
	})...)
}

// watchdogScript starts the watchdog: heal.sh after limit, as a transient
// systemd timer where systemd runs the host, else a setsid'd shell whose
// pid is recorded for Down to kill.
func watchdogScript(testID string, systemd bool, limit time.Duration) string {
	d := q.Quote(runDir(testID))
	secs := int(limit.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	if systemd {
		unit := q.Quote(watchdogUnit(testID))
		return fmt.Sprintf("systemd-run --quiet --unit=%[1]s --on-active=%[2]ds --timer-property=AccuracySec=1s /bin/sh %[3]s/heal.sh && echo %[1]s > %[3]s/watchdog.unit",
			unit, secs, d)
	}
	inner := fmt.Sprintf("sleep %d; exec /bin/sh %s/heal.sh", secs, d)
	return fmt.Sprintf("setsid /bin/sh -c %s </dev/null >/dev/null 2>&1 &\necho $! > %s/watchdog.pid", q.Quote(inner), d)
}

// heal runs the heal script (as Down does: the watchdog cancelled first)
// from this side, so that a host whose directory is already gone is still
// healed.
func (h *host) heal(ctx context.Context) error {
	freezer := h.freezer
	if freezer == "" {
		freezer = "signal" // the probe did not finish: the directory may be there
	}
	script := healScript(h.testID, freezer, h.cgroup)
	res, err := h.runRoot(ctx, script, []string{"down"})
	if err != nil && ctx.Err() == nil && h.inv != nil {
		// The connection broke (a network blip, a host rebooted): heal
		// over a new one.
		c, derr := dial(ctx, h.inv, h.Host)
		if derr != nil {
			return fmt.Errorf("healing %s: %w; logging in again: %w", h.label(), err, derr)
		}
		h.mu.Lock()
		if h.client != nil {
			h.client.Close()
		}
		h.client = c
		h.mu.Unlock()
		res, err = h.runRoot(ctx, script, []string{"down"})
	}
	if err != nil {
		return fmt.Errorf("healing %s: %w", h.label(), err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("healing %s: exit %d: %s", h.label(), res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	h.mu.Lock()
	h.paused = false
	h.mu.Unlock()
	return nil
}

// goArch turns uname -m into Go's name.
func goArch(m string) string {
	switch m {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	case "i386", "i486", "i586", "i686":
		return "386"
	case "armv6l", "armv7l", "armv8l":
		return "arm"
	case "ppc64le", "s390x", "riscv64", "mips64", "mips64le", "loong64":
		return m
	}
	return m
}

// DownByID heals the hosts of inv after test testID from a process that
// did not open them (`check cluster down --id` after a harness that
// died): on each host it runs the test's heal.sh as Down would, and
// removes the test's chain even where the directory is already gone. A
// host with nothing of the test is left as it is. Every host that cannot
// be healed is named.
func DownByID(ctx context.Context, inv *Inventory, testID string) error {
	if !validID.MatchString(testID) {
		return fmt.Errorf("test id %q: want letters, digits, '.', '_' and '-', at most 64, from a letter or digit", testID)
	}
	d := q.Quote(runDir(testID))
	script := fmt.Sprintf("if [ -f %[1]s/heal.sh ]; then /bin/sh %[1]s/heal.sh down || exit 1; fi\n%[2]s", d, healChainScript(ChainName(testID)))
	return rootOnEveryHost(ctx, inv, testID, script, func(h Host) string {
		return fmt.Sprintf("healing %s after test %s", h.label(), testID)
	})
}

// rootOnEveryHost runs script as root on every host of inv at once, over
// logins of its own (a process that did not open the hosts: DownByID,
// Remove), and names every host where it could not run or failed, each
// as what says.
func rootOnEveryHost(ctx context.Context, inv *Inventory, testID, script string, what func(Host) string) error {
	clients, err := dialAll(ctx, inv)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, entry := range inv.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := &host{Host: entry, testID: testID, client: clients[i]}
			res, err := h.run(ctx, `id -u`, nil)
			if err == nil {
				h.root = strings.TrimSpace(res.Stdout) == "0"
				res, err = h.runRoot(ctx, script, nil)
			}
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", what(entry), err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Bare: a host carries nothing of the node image, and no name service
// there knows n1 or storage (nodes.Bare).
func (hs *Hosts) Bare() bool { return true }

var (
	_ nodes.Bare        = (*Hosts)(nil)
	_ nodes.Partitioner = (*Hosts)(nil)
)

// Remove deletes paths (files or directories, absolute, none of them /)
// on every host of inv, over logins of its own: the harness removes what
// it installed on hosts the inventory lets it wipe, once Down has killed
// every process that held them. Each host refused is named; a host of
// inv that is not wipe: true is refused before anything is removed.
func Remove(ctx context.Context, inv *Inventory, paths []string) error {
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") || strings.Trim(p, "/") == "" || strings.Contains(p, "..") {
			return fmt.Errorf("remove %q: not an absolute path below /", p)
		}
	}
	for _, h := range inv.Hosts {
		if !h.Wipe {
			return fmt.Errorf("%s: wipe is not true: fencecheck removes nothing there", h.label())
		}
	}
	return rootOnEveryHost(ctx, inv, "", "rm -rf -- "+q.Join(paths), func(h Host) string {
		return fmt.Sprintf("removing %s on %s", strings.Join(paths, " "), h.label())
	})
}
