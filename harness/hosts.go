package harness

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/compose/sshnodes"
	q "github.com/fencecheck/fencecheck/internal/shellquote"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/internal/words"
)

// The system on the user's own hosts (--hosts): the SSH driver
// (compose/sshnodes) in place of the Docker engine. It is a dockerSystem
// whose nodes are the hosts: the backend, the storage, the agents and
// the faults reach them through nodes.Nodes as they reach containers.
// What differs is here: nothing is built, the hosts are opened (every
// one logged in to before anything is written; one that cannot be
// reached is bad input, named), the check binary and the servers'
// programs are copied in (installedHosts records each file), an earlier
// run's data and logs are removed where the inventory allows it (wipe)
// and refused where it does not, and at the end the hosts are healed
// (sshnodes.Hosts.Down) and, where wipe allows it, left without
// anything fencecheck installed or wrote.

// hostsWatchdogMargin is how long past the time limit each host waits
// for the harness before it heals itself: set-up, the final reads and
// the teardown, with room to spare.
const hostsWatchdogMargin = 15 * time.Minute

// installedHosts is the hosts of a run, recording every file copied in
// so that the teardown can remove them where the inventory allows it.
type installedHosts struct {
	*sshnodes.Hosts
	mu     sync.Mutex
	copied map[string][]string // by node
}

// CopyTo copies as the driver does, and records the file.
func (h *installedHosts) CopyTo(ctx context.Context, node, dstPath string, content []byte, mode int64) error {
	if err := h.Hosts.CopyTo(ctx, node, dstPath, content, mode); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.copied[node] {
		if p == dstPath {
			return nil
		}
	}
	h.copied[node] = append(h.copied[node], dstPath)
	return nil
}

// openHosts sets up a run on the hosts of --hosts: they are logged in to
// and readied (sshnodes.Open), the check binary is copied to each, the
// data and logs of an earlier run removed (wipe) or refused, then the
// servers, the storage and the clients' spec as on Docker.
func (s systemSetup) openHosts(ctx context.Context) (System, error) {
	t, st := s.t, s.st
	cfg, b := &t.cfg, t.info
	id := st.testID
	if id == "" {
		id = testID(cfg, time.Now())
	}
	db, servers, err := b.NewDB(t.setup(id))
	if err != nil {
		return nil, err
	}
	binPath, err := agentBinary(cfg)
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	st.phase("cluster")
	hs, err := sshnodes.Open(ctx, t.inv, id, sshnodes.Options{Watchdog: cfg.TimeLimit + hostsWatchdogMargin})
	if err != nil {
		// A host that cannot be reached or readied: the file's to fix,
		// before anything was left on any host.
		return nil, usage.Errorf("hosts", "%v", err)
	}
	ih := &installedHosts{Hosts: hs, copied: map[string][]string{}}
	var names []string
	for i := 1; i <= servers; i++ {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	ds := &dockerSystem{t: t, nodes: ih, hosts: ih, db: db, servers: names, logf: s.logf, dir: s.dir, st: st}
	var addrs []string
	for _, h := range t.inv.Hosts {
		addrs = append(addrs, fmt.Sprintf("%s %s (%s)", h.Name, h.Address, h.Peer))
	}
	s.logf("hosts %s (test %s): %s, storage, %s: %s", t.inv.Path, id, words.Plural(servers, "server"), words.Plural(cfg.Clients, "client"), strings.Join(addrs, ", "))
	if err := ds.installHosts(ctx, binPath, bin); err != nil {
		ds.Close(context.Background())
		return nil, err
	}
	st.phase("servers")
	if err := ds.start(ctx, id); err != nil {
		ds.Close(context.Background())
		return nil, err
	}
	s.logf("hosts ready in %s", time.Since(start).Round(time.Millisecond))
	return ds, nil
}

// installHosts readies each host: the check binary must suit it (its
// architecture), an earlier run's data and logs go where the inventory
// lets fencecheck wipe (and stop the run where it does not), and the
// check binary is copied in.
func (s *dockerSystem) installHosts(ctx context.Context, binPath string, bin []byte) error {
	want, err := elfArch(binPath)
	if err != nil {
		return err
	}
	inv := s.t.inv
	return backends.OnEachNode(nodeNames(s.nodes), func(_ int, n string) error {
		h, _ := inv.Host(n)
		res, err := s.nodes.Exec(ctx, n, []string{"uname", "-m"})
		if err != nil {
			return err
		}
		if got := goArchOf(strings.TrimSpace(res.Stdout)); got != want {
			return usage.Errorf("hosts", "host %s (%s) is %s, and the check binary %s is built for %s: build one for it with CGO_ENABLED=0 GOARCH=%s go build -o check-%s ./cmd/check and give it with --agent-binary",
				n, h.Address, got, binPath, want, got, got)
		}
		dirs := []string{backends.DataRoot, backends.LogDir}
		var script string
		if h.Wipe {
			script = "rm -rf " + q.Join(dirs)
		} else {
			// Without wipe nothing of an earlier run is removed: a
			// server would start on its data.
			script = fmt.Sprintf(`for d in %s; do if [ -n "$(ls -A "$d" 2>/dev/null)" ]; then echo "$d"; fi; done`, q.Join(dirs))
		}
		res, err = s.nodes.Exec(ctx, n, []string{"sh", "-c", script + "\nmkdir -p " + q.Quote(path.Dir(nodes.BinaryPath))})
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("readying host %s (%s): exit %d: %s", n, h.Address, res.ExitCode, strings.TrimSpace(res.Stderr))
		}
		if left := strings.Fields(res.Stdout); len(left) > 0 {
			return usage.Errorf("hosts", "host %s (%s) holds %s from an earlier run, which a server would start on: let fencecheck remove it (wipe: true in %s), or remove it yourself",
				n, h.Address, strings.Join(left, " and "), inv.Path)
		}
		return s.nodes.CopyTo(ctx, n, nodes.BinaryPath, bin, 0o755)
	})
}

// closeHosts ends a run on hosts: every node resumed, the logs
// collected, the hosts healed (the test's processes killed, its rules
// and directories removed), and on the hosts the inventory lets
// fencecheck wipe, every file it copied in and the servers' data and
// logs removed.
func (s *dockerSystem) closeHosts(ctx context.Context) error {
	errs := s.resumeAndCollectLogs(ctx)
	// The heal first: the processes that hold the files are gone then.
	if err := s.hosts.Down(ctx); err != nil {
		errs = append(errs, fmt.Errorf("healing the hosts: %w (heal them with: check cluster down --id %s --hosts %s)", err, s.hosts.ID(), s.t.inv.Path))
		return errors.Join(errs...)
	}
	var kept []string
	for _, h := range s.t.inv.Hosts {
		s.hosts.mu.Lock()
		files := append([]string{backends.DataRoot, backends.LogDir}, s.hosts.copied[h.Name]...)
		s.hosts.mu.Unlock()
		if !h.Wipe {
			kept = append(kept, h.Name)
			continue
		}
		if err := wipeHost(ctx, s.t.inv, h, files); err != nil {
			errs = append(errs, err)
			continue
		}
		s.logf("removed from %s: %s", h.Name, strings.Join(files, " "))
	}
	if len(kept) > 0 {
		s.logf("left on %s (no wipe: true in %s): the check binary, the servers' programs, data and logs under %s and %s",
			strings.Join(kept, ", "), s.t.inv.Path, backends.DataRoot, backends.LogDir)
	}
	return errors.Join(errs...)
}

// wipeHost removes files from host h over a login of its own (the
// driver's connections are closed once the hosts are healed).
func wipeHost(ctx context.Context, inv *sshnodes.Inventory, h sshnodes.Host, files []string) error {
	one := *inv
	one.Hosts = []sshnodes.Host{h}
	if err := sshnodes.Remove(ctx, &one, files); err != nil {
		return fmt.Errorf("removing what fencecheck installed on %s (%s): %w", h.Name, h.Address, err)
	}
	return nil
}

// hostsInfo describes a run on hosts for the report.
func (s *dockerSystem) hostsInfo() map[string]string {
	var hosts []string
	for _, h := range s.t.inv.Hosts {
		hosts = append(hosts, fmt.Sprintf("%s=%s", h.Name, h.Address))
	}
	sort.Strings(hosts)
	info := map[string]string{
		"hosts":         fmt.Sprintf("%s: %s", s.t.inv.Path, strings.Join(hosts, ", ")),
		"hosts test id": s.hosts.ID(),
	}
	for k, v := range s.db.Info() {
		info[k] = v
	}
	return info
}

// nodeNames are the names of every machine of n.
func nodeNames(n nodes.Nodes) []string {
	var out []string
	for _, node := range n.All() {
		out = append(out, node.Name)
	}
	return out
}

// elfArch is the architecture a static binary is built for, as Go
// spells it.
func elfArch(bin string) (string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return "", err
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	}
	return "", fmt.Errorf("%s is built for %s, which fencecheck does not run on", bin, f.Machine)
}

// goArchOf is uname -m as Go spells it.
func goArchOf(m string) string {
	switch m {
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return m
}
