package harness

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/compose/sshnodes"
	"github.com/fencecheck/fencecheck/internal/dockertest/sshhosts"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// etcd on SSH hosts (--hosts): seven sshd containers made for the test
// (internal/dockertest/sshhosts), three servers, the storage and three
// clients, without the check binary or etcd (the image's compiled etcd is
// removed from each), so that the run installs both itself. Unfenced
// under pause-holder the lock is invalid, fenced it is valid, and fenced
// under kill and under a partition (the driver's own chain) it stays
// valid, each fault taking effect; the four runs share the hosts, and after each the hosts hold nothing
// of it: no process, no rule, no directory, no file installed.
//
// With FENCECHECK_COMPARE_DOCKER=1 the same runs go on Docker containers
// afterwards, in the same sitting, and both times are logged
// (docs/real-nodes.md records them).
func TestDockerEtcdOnSSHHosts(t *testing.T) {
	bin := dockerOrSkip(t)
	etcd := nodes.ProgramPath(images.EtcdBinaryName(images.EtcdImageVersion))
	h := sshhosts.Start(t, []sshhosts.Host{
		{Role: nodes.RoleServer}, {Role: nodes.RoleServer}, {Role: nodes.RoleServer},
		{Role: nodes.RoleStorage},
		{Role: nodes.RoleClient}, {Role: nodes.RoleClient}, {Role: nodes.RoleClient},
	}, sshhosts.Options{Remove: []string{etcd, nodes.BinaryPath}})
	runs := []struct {
		name    string
		fencing string
		nemesis []string
		want    models.Verdict
	}{
		{"pause-holder unfenced is invalid", "none", []string{"pause-holder"}, models.Invalid},
		{"pause-holder fenced is valid", "all", []string{"pause-holder"}, models.Valid},
		{"kill fenced is valid", "all", []string{"kill"}, models.Valid},
		{"a partition fenced is valid", "all", []string{"partition-one"}, models.Valid},
	}
	config := func(t *testing.T, fencing string, nemesis []string) Config {
		cfg := dockerConfig(t, "etcd", fencing, nemesis...)
		cfg.AgentBinary, cfg.Clients, cfg.TimeLimit = bin, 3, 12*time.Second
		cfg.StopOnViolation = fencing == "none"
		if nemesis[0] != "pause-holder" {
			cfg.TimeLimit = 10 * time.Second
		}
		return cfg
	}
	took := map[string]time.Duration{}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			cfg := config(t, r.fencing, r.nemesis)
			cfg.Hosts, cfg.Given = h.File, map[string]bool{"hosts": true}
			start := time.Now()
			out, err := runWith(quiet(), cfg, testWriter{t}, &runState{})
			took[r.name] = time.Since(start)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			t.Logf("on hosts: %s in %s", out.Result.Verdict, took[r.name].Round(100*time.Millisecond))
			wantDocker(t, out, r.want)
			for _, f := range r.nemesis {
				if n := nemesisEvents(t, out, f); n == 0 {
					t.Errorf("no %s took effect (store %s)", f, out.Dir)
				} else {
					t.Logf("%s: %d", f, n)
				}
			}
			res, err := os.ReadFile(runstore.Run(out.Dir).Results())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res), h.File+": c1=") || !strings.Contains(string(res), "etcd 3.6 ("+etcd+") on n1, n2, n3") {
				t.Errorf("results.json does not name the hosts and the etcd installed on them (store %s)", out.Dir)
			}
			hostsLeftClean(t, h, out.TestID, etcd)
		})
	}
	if os.Getenv("FENCECHECK_COMPARE_DOCKER") != "1" {
		return
	}
	for _, r := range runs {
		t.Run("docker: "+r.name, func(t *testing.T) {
			cfg := config(t, r.fencing, r.nemesis)
			cfg.FreshCluster = true
			start := time.Now()
			out, err := runWith(quiet(), cfg, testWriter{t}, &runState{})
			d := time.Since(start)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			t.Logf("on Docker: %s in %s; on hosts: %s", out.Result.Verdict, d.Round(100*time.Millisecond), took[r.name].Round(100*time.Millisecond))
			wantDocker(t, out, r.want)
		})
	}
}

// hostsLeftClean asks every host, through the engine (not the driver
// under test), what is left of test id: a process of it, its directory,
// its iptables chain, the files it installed or wrote.
func hostsLeftClean(t *testing.T, h *sshhosts.Fixture, id, etcd string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := `left=""
for p in /proc/[0-9]*; do
  [ "${p#/proc/}" = "$$" ] && continue
  c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null)
  case "$c" in *` + nodes.BinaryPath + `*|*etcd-3.6*) left="$left process:${p#/proc/}:$c";; esac
done
for f in /run/fencecheck/` + id + ` ` + nodes.BinaryPath + ` ` + etcd + ` /var/lib/fencecheck /var/log/fencecheck; do [ -e $f ] && left="$left $f"; done
iptables -w -S | grep -q ` + sshnodes.ChainName(id) + ` && left="$left chain"
echo "$left"`
	for n := range h.Container {
		out, err := h.Sh(ctx, n, script)
		if err != nil {
			t.Errorf("asking %s: %v", n, err)
			continue
		}
		if left := strings.TrimSpace(out); left != "" {
			t.Errorf("%s still holds, after test %s: %s", n, id, left)
		}
	}
}
