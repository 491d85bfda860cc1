package nemesis_test

// Integration tests against the real Docker engine: every fault is proved
// from inside the containers. Whether they run is internal/dockertest's
// rule (skipped under -short, and when no daemon answers, except under
// CI=true, where they run or fail). The node image must be built (`check image build`); the static
// check binary and the delayer are built on first use.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/backends/memory"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/dockertest"
	"github.com/fencecheck/fencecheck/nemesis"
)

const delaydPath = "/usr/local/bin/delayd"

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.RemoveBinaries()
	os.Exit(code)
}

// up brings a cluster up with the check binary and the delayer in every
// node, and takes it down when the test ends.
func up(t *testing.T, servers int, storage bool, clients int) *engine.Cluster {
	t.Helper()
	cli := dockertest.Engine(t, engine.Connect)
	check := dockertest.CheckBinary(t)
	delaydBin := dockertest.Binary(t, "github.com/fencecheck/fencecheck/nemesis/delayd")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	image, err := images.EnsureImage(ctx, cli, io.Discard)
	if err != nil {
		t.Fatalf("node image: %v", err)
	}
	var b [3]byte
	rand.Read(b[:])
	start := time.Now()
	c, err := engine.Up(ctx, cli, engine.Spec{TestID: "nm-" + hex.EncodeToString(b[:]), Image: image,
		Servers: servers, Storage: storage, Clients: clients, Binary: check})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Down(ctx); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	delayd, err := os.ReadFile(delaydBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.All() {
		if err := c.CopyTo(ctx, n.Name, delaydPath, delayd, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("cluster %s up in %s", c.TestID, time.Since(start).Round(time.Millisecond))
	return c
}

func names(c *engine.Cluster, role string) []string {
	var out []string
	for _, n := range c.All() {
		if role == "" || n.Role == role {
			out = append(out, n.Name)
		}
	}
	return out
}

// sh runs a script in node and fails the test unless it exits 0.
func sh(t *testing.T, c *engine.Cluster, node, script string) string {
	t.Helper()
	return shell(t, c, node, "sh", script)
}

// bash is sh with bash, for /dev/tcp and read -t.
func bash(t *testing.T, c *engine.Cluster, node, script string) string {
	t.Helper()
	return shell(t, c, node, "bash", script)
}

func shell(t *testing.T, c *engine.Cluster, node, shell, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.Exec(ctx, node, []string{shell, "-c", script})
	if err != nil {
		t.Fatalf("%s: %v", node, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("%s: `%s` exited %d: %s %s", node, script, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// startLockd runs `check lockd --listen :7000` in each node, the server
// the probes reach, and waits until each answers.
func startLockd(t *testing.T, c *engine.Cluster, nodes ...string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range nodes {
		if _, err := c.ExecDetached(ctx, n, []string{"sh", "-c", "exec " + engine.BinaryPath + " lockd --listen :7000 >/tmp/lockd.log 2>&1"}, engine.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		sh(t, c, n, fmt.Sprintf("for i in $(seq 100); do %s probe http://127.0.0.1:7000/health 2>/dev/null && exit 0; sleep 0.1; done; exit 1", engine.BinaryPath))
	}
}

// probe GETs http://to:7000/health from inside from (1 s timeout).
func probe(c *engine.Cluster, from, to string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Exec(ctx, from, []string{engine.BinaryPath, "probe", "http://" + to + ":7000/health"})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s", strings.TrimSpace(res.Stderr))
	}
	return nil
}

type link struct{ from, to string }

// reach probes every ordered pair of nodes at once.
func reach(c *engine.Cluster, nodes []string) map[link]error {
	out := map[link]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for _, a := range nodes {
		for _, b := range nodes {
			if a == b {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				err := probe(c, a, b)
				mu.Lock()
				out[link{a, b}] = err
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return out
}

// expectReach fails the test unless exactly the cut links fail.
func expectReach(t *testing.T, got map[link]error, cut func(a, b string) bool) {
	t.Helper()
	var keys []link
	for l := range got {
		keys = append(keys, l)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].from+keys[i].to < keys[j].from+keys[j].to })
	for _, l := range keys {
		err := got[l]
		switch want := cut(l.from, l.to); {
		case want && err == nil:
			t.Errorf("%s still reaches %s", l.from, l.to)
		case !want && err != nil:
			t.Errorf("%s cannot reach %s: %v", l.from, l.to, err)
		}
	}
}

// chainRules lists the rules (-A lines) of an iptables chain in node; a
// chain that does not exist has none.
func chainRules(t *testing.T, c *engine.Cluster, node, chain string) []string {
	t.Helper()
	out := sh(t, c, node, fmt.Sprintf("iptables -w -S %s 2>/dev/null || true", chain))
	var rules []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-A ") {
			rules = append(rules, l)
		}
	}
	return rules
}

// expectHealed fails the test unless no node is paused and no node holds a
// partition or delay rule or runs a delayer.
func expectHealed(t *testing.T, c *engine.Cluster) {
	t.Helper()
	for _, n := range names(c, "") {
		paused, err := c.Paused(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if paused {
			t.Errorf("%s is still paused", n)
			continue
		}
		for _, chain := range []string{nemesis.FenceChain, nemesis.DelayChain} {
			if r := chainRules(t, c, n, chain); len(r) > 0 {
				t.Errorf("%s: %s still holds %v", n, chain, r)
			}
		}
		if out := sh(t, c, n, "pgrep -a delay || true"); strings.TrimSpace(out) != "" {
			t.Errorf("%s still runs a delayer: %s", n, out)
		}
	}
}

type freezer struct{ c *engine.Cluster }

func (f freezer) Freeze(ctx context.Context, n string) error { return f.c.Pause(ctx, n) }
func (f freezer) Thaw(ctx context.Context, n string) error   { return f.c.Unpause(ctx, n) }

func fixed(nodes ...string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return nodes, nil }
}

func rng() *mrand.Rand { return mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 7)) }

func TestDockerPause(t *testing.T) {
	c := up(t, 2, false, 0)
	startLockd(t, c, "n1")
	if err := probe(c, "n2", "n1"); err != nil {
		t.Fatalf("before the pause: %v", err)
	}
	ctx := context.Background()
	p := &nemesis.Pause{Label: "pause-server", Freezer: freezer{c}, Targets: fixed("n1")}
	start := time.Now()
	ts, err := p.Start(ctx, rng())
	if err != nil || !slices.Equal(ts, []string{"n1"}) {
		t.Fatalf("Start = %v, %v", ts, err)
	}
	t.Logf("pause applied in %s", time.Since(start).Round(time.Millisecond))
	if paused, _ := c.Paused(ctx, "n1"); !paused {
		t.Fatal("n1 is not paused")
	}
	// The frozen kernel still completes the TCP handshake; the server
	// never answers, so the peer times out rather than being refused.
	out := bash(t, c, "n2", fmt.Sprintf(`exec 3<>/dev/tcp/%s/7000 && echo connected; printf 'GET /health HTTP/1.1\r\nHost: n1\r\n\r\n' >&3; if read -t 2 -u 3 line; then echo "answered $line"; else echo "no answer"; fi`, ipOf(t, c, "n1")))
	t.Logf("raw TCP to the paused n1: %s", strings.Join(strings.Fields(out), " "))
	if !strings.Contains(out, "no answer") {
		t.Errorf("the paused n1 answered: %s", out)
	}
	err = probe(c, "n2", "n1")
	if err == nil || !strings.Contains(err.Error(), "Timeout") {
		t.Errorf("probe of the paused n1 = %v, want a timeout", err)
	}
	start = time.Now()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("pause healed in %s", time.Since(start).Round(time.Millisecond))
	if err := probe(c, "n2", "n1"); err != nil {
		t.Errorf("after the heal: %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	expectHealed(t, c)
}

func ipOf(t *testing.T, c *engine.Cluster, node string) string {
	t.Helper()
	n, err := c.Node(node)
	if err != nil {
		t.Fatal(err)
	}
	return n.IP
}

// cutByShape is what a shape cuts, read from the targets Start returned
// (the order Shape.Grudge documents), for three servers.
func cutByShape(shape nemesis.Shape, order []string) func(a, b string) bool {
	pair := func(x, y string) func(a, b string) bool {
		return func(a, b string) bool { return (a == x && b == y) || (a == y && b == x) }
	}
	across := func(side []string, other []string) func(a, b string) bool {
		return func(a, b string) bool {
			return (slices.Contains(side, a) && slices.Contains(other, b)) || (slices.Contains(side, b) && slices.Contains(other, a))
		}
	}
	switch shape {
	case nemesis.IsolateOne, nemesis.IsolatePrimary, nemesis.Halves, nemesis.ClientFromServers:
		return across(order[:1], order[1:])
	case nemesis.Bridge:
		return pair(order[0], order[1]) // order[2] is the bridge
	case nemesis.ClientFromStorage:
		return pair(order[0], order[1])
	case nemesis.Ring:
		// With three servers the ring is a bridge: the one cut pair is
		// the two servers that do not see every other.
		return nil
	}
	return nil
}

func TestDockerPartition(t *testing.T) {
	c := up(t, 3, true, 2)
	all := names(c, "")
	startLockd(t, c, all...)
	servers := names(c, engine.RoleServer)
	expectReach(t, reach(c, all), func(a, b string) bool { return false })
	if t.Failed() {
		t.FailNow()
	}

	holders := &nemesis.Holders{SlotOf: func(p int) string { return history.SlotOf(p, 2) }}
	holders.Observe(history.Event{Index: 1, Process: 3, Type: history.OK, F: history.Acquire, Key: "k0", Token: 5})

	shapes := append(slices.Clone(nemesis.ServerShapes), nemesis.ClientFromServers, nemesis.ClientFromStorage)
	for _, shape := range shapes {
		t.Run(string(shape), func(t *testing.T) {
			p := &nemesis.Partition{Label: "partition-" + string(shape), Cluster: c, Shapes: []nemesis.Shape{shape},
				Servers: servers, Storage: engine.StorageNode,
				Primary: func(context.Context) (string, error) { return "n2", nil },
				Holder:  holders.Wait}
			ctx := context.Background()
			start := time.Now()
			order, err := p.Start(ctx, rng())
			if err != nil || len(order) == 0 {
				t.Fatalf("Start = %v, %v", order, err)
			}
			applied := time.Since(start)
			got := reach(c, all)
			t.Logf("%s: cut %v in %s", shape, order, applied.Round(time.Millisecond))
			cut := cutByShape(shape, order)
			if shape == nemesis.Ring {
				// Exactly one pair of servers is cut; the third sees both.
				var failed []link
				for l, err := range got {
					if err != nil {
						failed = append(failed, l)
					}
				}
				if len(failed) != 2 || failed[0].from != failed[1].to || failed[0].to != failed[1].from {
					t.Fatalf("ring on three servers: failed links %v", failed)
				}
				cut = func(a, b string) bool {
					return (a == failed[0].from && b == failed[0].to) || (a == failed[0].to && b == failed[0].from)
				}
			}
			expectReach(t, got, cut)
			if shape == nemesis.IsolatePrimary && order[0] != "n2" {
				t.Errorf("isolated %s, not the primary n2", order[0])
			}
			if (shape == nemesis.ClientFromServers || shape == nemesis.ClientFromStorage) && order[0] != "c2" {
				t.Errorf("cut %s, not the holder c2", order[0])
			}
			start = time.Now()
			if err := p.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: healed in %s", shape, time.Since(start).Round(time.Millisecond))
			expectReach(t, reach(c, all), func(a, b string) bool { return false })
			expectHealed(t, c)
		})
	}

	t.Run("established", func(t *testing.T) {
		// Connections opened before the cut stop carrying data too:
		// n1 → n2 (cut when n2 is isolated) and n1 → n3 (not cut).
		type result struct {
			out string
			err error
		}
		keepOpen := func(to string) chan result {
			ch := make(chan result, 1)
			script := fmt.Sprintf(`rm -f /tmp/go-%[1]s; exec 3<>/dev/tcp/%[1]s/7000 || exit 1
req() { printf 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n' >&3; read -t 3 -u 3 line && echo "answered $line" || echo "no answer"; while read -t 0.2 -u 3 l; do :; done; }
req; touch /tmp/open-%[1]s
for i in $(seq 200); do [ -f /tmp/go-%[1]s ] && break; sleep 0.05; done
req`, ipOf(t, c, to))
			go func() {
				res, err := c.Exec(context.Background(), "n1", []string{"bash", "-c", script})
				ch <- result{res.Stdout + res.Stderr, err}
			}()
			sh(t, c, "n1", fmt.Sprintf("for i in $(seq 100); do [ -f /tmp/open-%s ] && exit 0; sleep 0.05; done; exit 1", ipOf(t, c, to)))
			return ch
		}
		toN2, toN3 := keepOpen("n2"), keepOpen("n3")
		p := &nemesis.Partition{Label: "partition-primary", Cluster: c, Shapes: []nemesis.Shape{nemesis.IsolatePrimary},
			Servers: servers, Primary: func(context.Context) (string, error) { return "n2", nil }}
		ctx := context.Background()
		if _, err := p.Start(ctx, rng()); err != nil {
			t.Fatal(err)
		}
		defer p.Stop(ctx)
		sh(t, c, "n1", fmt.Sprintf("touch /tmp/go-%s /tmp/go-%s", ipOf(t, c, "n2"), ipOf(t, c, "n3")))
		r2, r3 := <-toN2, <-toN3
		t.Logf("established n1→n2: %q; n1→n3: %q", strings.Join(strings.Fields(r2.out), " "), strings.Join(strings.Fields(r3.out), " "))
		if r2.err != nil || strings.Count(r2.out, "answered") != 1 || !strings.Contains(r2.out, "no answer") {
			t.Errorf("the established connection to the isolated n2 was not cut: %q, %v", r2.out, r2.err)
		}
		if r3.err != nil || strings.Count(r3.out, "answered") != 2 {
			t.Errorf("the established connection to n3 broke: %q, %v", r3.out, r3.err)
		}
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		expectHealed(t, c)
	})

	t.Run("heal-paused", func(t *testing.T) {
		// A node paused while partitioned cannot be exec'd into: Stop
		// retries until it is resumed.
		p := &nemesis.Partition{Label: "partition-primary", Cluster: c, Shapes: []nemesis.Shape{nemesis.IsolatePrimary},
			Servers: servers, Primary: func(context.Context) (string, error) { return "n1", nil }}
		ctx := context.Background()
		if _, err := p.Start(ctx, rng()); err != nil {
			t.Fatal(err)
		}
		if err := c.Pause(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(1500 * time.Millisecond)
			c.Unpause(context.Background(), "n1")
		}()
		start := time.Now()
		if err := p.Stop(ctx); err != nil {
			t.Fatalf("Stop with n1 paused for 1.5s: %v", err)
		}
		t.Logf("healed a paused node in %s", time.Since(start).Round(time.Millisecond))
		expectHealed(t, c)
		expectReach(t, reach(c, servers), func(a, b string) bool { return false })
	})
}

func TestDockerKill(t *testing.T) {
	c := up(t, 1, false, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := &etcd.DB{Version: "3.6", TestID: c.TestID}
	if err := db.Setup(ctx, c, []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("http://%s:%d", ipOf(t, c, "n1"), etcd.ClientPort)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "fencecheck/kill", "on disk"); err != nil {
		t.Fatal(err)
	}
	pidBefore := strings.TrimSpace(sh(t, c, "n1", "pgrep -x etcd-3.6"))

	k := &nemesis.Kill{Label: "kill-leader", Cluster: c, DB: db, Targets: func(ctx context.Context) ([]string, error) {
		p, err := db.Primary(ctx, c)
		return []string{p}, err
	}}
	ts, err := k.Start(ctx, rng())
	if err != nil || !slices.Equal(ts, []string{"n1"}) {
		t.Fatalf("Start = %v, %v", ts, err)
	}
	if out := sh(t, c, "n1", "pgrep -x etcd-3.6 || echo gone"); strings.TrimSpace(out) != "gone" {
		t.Fatalf("etcd still runs after the kill: %s", out)
	}
	health := fmt.Sprintf("http://127.0.0.1:%d/health", etcd.ClientPort)
	if res, _ := c.Exec(ctx, "n1", []string{engine.BinaryPath, "probe", health}); res.ExitCode == 0 || !strings.Contains(res.Stderr, "refused") {
		t.Errorf("the killed etcd answered: %d %s", res.ExitCode, res.Stderr)
	}
	start := time.Now()
	if err := k.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	sh(t, c, "n1", fmt.Sprintf("for i in $(seq 300); do %s probe %s 2>/dev/null && exit 0; sleep 0.1; done; exit 1", engine.BinaryPath, health))
	t.Logf("etcd answered again %s after Stop", time.Since(start).Round(time.Millisecond))
	pidAfter := strings.TrimSpace(sh(t, c, "n1", "pgrep -x etcd-3.6"))
	if pidAfter == "" || pidAfter == pidBefore {
		t.Errorf("etcd pid %q before, %q after: not a new process", pidBefore, pidAfter)
	}
	// One member: the key can only come from its disk.
	resp, err := cli.Get(ctx, "fencecheck/kill", clientv3.WithSerializable())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "on disk" {
		t.Errorf("after the restart the key holds %v", resp.Kvs)
	}
	if err := k.Stop(ctx); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if n := strings.Count(sh(t, c, "n1", "pgrep -x etcd-3.6 || true"), "\n"); n != 1 {
		t.Errorf("%d etcd processes after a second Stop", n)
	}
}

// connectTimes measures n TCP connects from node to ip:7000 inside the
// node, in milliseconds, sorted.
func connectTimes(t *testing.T, c *engine.Cluster, node, ip string, n int) []float64 {
	t.Helper()
	out := bash(t, c, node, fmt.Sprintf(`for i in $(seq %d); do s=$(date +%%s%%N); exec 3<>/dev/tcp/%s/7000 || exit 1; e=$(date +%%s%%N); exec 3>&-; echo $(( (e-s)/1000 )); done`, n, ip))
	var ms []float64
	for _, f := range strings.Fields(out) {
		us, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("connect times: %q", out)
		}
		ms = append(ms, float64(us)/1000)
	}
	sort.Float64s(ms)
	return ms
}

func median(xs []float64) float64 { return xs[len(xs)/2] }

func TestDockerLatency(t *testing.T) {
	c := up(t, 2, false, 0)
	startLockd(t, c, "n1", "n2")
	ctx := context.Background()

	// A delayer that does not exist: the probe must refuse, name it and
	// say whether sch_netem is there, and every Start must return the
	// refusal.
	noNetem := strings.Contains(sh(t, c, "n1", "tc qdisc add dev lo root netem delay 1ms 2>&1 && tc qdisc del dev lo root; true"), "unknown")
	missing := &nemesis.Latency{Cluster: c, Targets: fixed("n1"), Command: []string{"/usr/local/bin/no-such-delayer"}}
	err := missing.Probe(ctx, "n1")
	var refusal *nemesis.LatencyRefusal
	if !errors.As(err, &refusal) || refusal.Delayer == "" || !strings.Contains(err.Error(), "/usr/local/bin/no-such-delayer") {
		t.Errorf("probe with a missing delayer = %v, want a refusal naming it", err)
	}
	if refusal != nil && (noNetem != (refusal.Netem != "") || noNetem != strings.Contains(err.Error(), "no sch_netem")) {
		t.Errorf("the kernel lacks sch_netem: %v, but the refusal says: %v", noNetem, err)
	}
	if err != nil {
		missing.Unavailable = err
		if _, serr := missing.Start(ctx, rng()); serr == nil || serr.Error() != err.Error() {
			t.Errorf("Start of an unavailable latency = %v, want the probe's error", serr)
		}
	}

	// The delayers that must run: the check binary's `delay` command (what
	// a run uses) and delayd (what this test uses). Only a kernel that
	// cannot queue packets to user space is a reason not to test the
	// delay; a delayer that does not run, or a probe that cannot run, is
	// a failure.
	l := &nemesis.Latency{Cluster: c, Targets: fixed("n1", "n2"), Command: []string{delaydPath},
		Delayer: nemesis.Delayer{Queue: 7, Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond}}
	viaCheck := &nemesis.Latency{Cluster: c, Command: []string{engine.BinaryPath, "delay"}}
	for _, f := range []*nemesis.Latency{viaCheck, l} {
		err := f.Probe(ctx, "n1")
		switch {
		case err == nil:
		case !errors.As(err, &refusal):
			t.Fatalf("probing with %v: %v", f.Command, err)
		case refusal.NFQueue != "":
			dockertest.Unavailable(t, "NFQUEUE in the kernel", err)
		default:
			t.Fatalf("the delayer %v does not run in the nodes: %v", f.Command, err)
		}
	}
	ip2 := ipOf(t, c, "n2")
	before := connectTimes(t, c, "n1", ip2, 20)
	start := time.Now()
	ts, err := l.Start(ctx, rng())
	if err != nil || !slices.Equal(ts, []string{"n1", "n2"}) {
		t.Fatalf("Start = %v, %v", ts, err)
	}
	t.Logf("latency applied in %s", time.Since(start).Round(time.Millisecond))
	during := connectTimes(t, c, "n1", ip2, 20)
	start = time.Now()
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("latency healed in %s", time.Since(start).Round(time.Millisecond))
	after := connectTimes(t, c, "n1", ip2, 20)
	t.Logf("TCP connect n1→n2, median (min–max) ms: before %.1f (%.1f–%.1f), during %.1f (%.1f–%.1f), after %.1f (%.1f–%.1f)",
		median(before), before[0], before[len(before)-1], median(during), during[0], during[len(during)-1], median(after), after[0], after[len(after)-1])
	// A connect is one round trip: the SYN leaves n1 and the SYN-ACK
	// leaves n2, each held 50 ± 10 ms.
	if added := median(during) - median(before); added < 75 || added > 160 {
		t.Errorf("the delay added %.1f ms to a connect, want about 100", added)
	}
	if during[0]-median(before) < 70 {
		t.Errorf("a connect took only %.1f ms during the fault", during[0])
	}
	if median(after) > median(before)+20 {
		t.Errorf("after the heal a connect takes %.1f ms, before %.1f", median(after), median(before))
	}
	expectHealed(t, c)

	t.Run("loss", func(t *testing.T) {
		lossy := &nemesis.Latency{Cluster: c, Targets: fixed("n1"), Command: []string{delaydPath},
			Delayer: nemesis.Delayer{Queue: 7, Delay: time.Millisecond, Loss: 0.3}}
		sh(t, c, "n1", "rm -f /var/log/fencecheck/delay.log")
		if _, err := lossy.Start(ctx, rng()); err != nil {
			t.Fatal(err)
		}
		// Short HTTP exchanges: each retransmits what was lost.
		for range 30 {
			probe(c, "n1", "n2")
		}
		if err := lossy.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		out := sh(t, c, "n1", "cat /var/log/fencecheck/delay.log")
		var packets, dropped int
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "delayer: done:") {
				fmt.Sscanf(l, "delayer: done: %d packets held, %d of them dropped", &packets, &dropped)
			}
		}
		t.Logf("loss 0.3: %d of %d packets dropped", dropped, packets)
		// Binomial: with over 60 packets, 15% to 45% is beyond 3 sigma.
		if packets < 60 || float64(dropped) < 0.15*float64(packets) || float64(dropped) > 0.45*float64(packets) {
			t.Errorf("dropped %d of %d packets, want about 30%%; log:\n%s", dropped, packets, out)
		}
		expectHealed(t, c)
	})
}

// TestDockerScheduleInterrupt runs the schedule with each fault, cancels it
// while the fault holds, and checks that nothing is left applied.
func TestDockerScheduleInterrupt(t *testing.T) {
	c := up(t, 3, true, 2)
	ctx := context.Background()
	db := &memory.DB{TTL: 2 * time.Second}
	if err := db.Setup(ctx, c, []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	servers := names(c, engine.RoleServer)
	holders := &nemesis.Holders{SlotOf: func(p int) string { return history.SlotOf(p, 2) }}
	holders.Observe(history.Event{Index: 1, Process: 0, Type: history.OK, F: history.Acquire, Key: "k0", Token: 1})
	primary := func(ctx context.Context) (string, error) { return db.Primary(ctx, c) }
	faults := []nemesis.Fault{
		&nemesis.Pause{Label: "pause-server", Freezer: freezer{c}, Targets: fixed(servers...)},
		&nemesis.Partition{Label: "partition", Cluster: c, Shapes: nemesis.ServerShapes, Servers: servers, Storage: engine.StorageNode, Primary: primary},
		&nemesis.Partition{Label: "partition-client", Cluster: c, Shapes: []nemesis.Shape{nemesis.ClientFromServers}, Servers: servers, Holder: holders.Wait},
		&nemesis.Kill{Label: "kill", Cluster: c, DB: db, Targets: fixed("n1")},
		&nemesis.Latency{Cluster: c, Targets: fixed(servers...), Command: []string{delaydPath},
			Delayer: nemesis.Delayer{Queue: 7, Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.02}},
	}
	lockdUp := func() error {
		return probe(c, "c1", "n1")
	}
	for _, f := range append(faults, nil) {
		name := "all"
		fs := faults
		if f != nil {
			name, fs = f.Name(), []nemesis.Fault{f}
		}
		t.Run(name, func(t *testing.T) {
			var hist bytes.Buffer
			lasts := time.Minute
			if f == nil {
				lasts = 700 * time.Millisecond // several faults, one after another
			}
			sched := &nemesis.Schedule{Faults: fs, Interval: 100 * time.Millisecond,
				FaultDuration: func(nemesis.Fault) time.Duration { return lasts },
				Rng:           mrand.New(mrand.NewPCG(1, 2)), Rec: history.NewRecorder(&hist), Log: t.Logf}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- sched.Run(rctx) }()
			if f == nil {
				time.Sleep(8 * time.Second)
			}
			deadline := time.Now().Add(time.Minute)
			for len(sched.Active()) == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if len(sched.Active()) == 0 {
				cancel()
				t.Fatalf("no fault took effect within a minute; history:\n%s", hist.String())
			}
			if f != nil {
				time.Sleep(300 * time.Millisecond) // well into the fault
			}
			active := sched.Active()
			start := time.Now()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			if err := nemesis.HealAll(fs); err != nil {
				t.Errorf("HealAll: %v", err)
			}
			t.Logf("interrupted during %v; healed %s later", active, time.Since(start).Round(time.Millisecond))
			if len(active) == 0 {
				t.Errorf("the interrupt did not come while a fault held")
			}
			expectHealed(t, c)
			lines := strings.Split(strings.TrimSpace(hist.String()), "\n")
			if len(lines) < 2 || !strings.Contains(lines[0], `"invoke"`) || !strings.Contains(lines[len(lines)-1], `"info"`) {
				t.Errorf("history:\n%s", hist.String())
			}
			t.Logf("history: %s", strings.Join(lines, " "))
			// The lock service answers again (a kill is healed by a restart).
			var err error
			for range 50 {
				if err = lockdUp(); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Errorf("lockd on n1 does not answer after the heal: %v", err)
			}
		})
	}
}

// etcd's Primary, asked inside the nodes (so that it works on a remote
// engine), names the member that the etcd client, dialled from this host,
// says leads; for Debian's 3.4 and for 3.6.
func TestDockerEtcdPrimaryIsTheLeader(t *testing.T) {
	for _, version := range []string{"3.4", "3.6"} {
		t.Run(version, func(t *testing.T) {
			c := up(t, 3, false, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			db := &etcd.DB{Version: version, TestID: c.TestID}
			nodes := []string{"n1", "n2", "n3"}
			if err := db.Setup(ctx, c, nodes); err != nil {
				t.Fatal(err)
			}
			var eps []string
			for _, n := range nodes {
				eps = append(eps, fmt.Sprintf("http://%s:%d", ipOf(t, c, n), etcd.ClientPort))
			}
			cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			st, err := cli.Status(ctx, eps[0])
			if err != nil {
				t.Fatal(err)
			}
			ml, err := cli.MemberList(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			for _, m := range ml.Members {
				if m.ID == st.Leader {
					want = m.Name
				}
			}
			got, err := db.Primary(ctx, c)
			if err != nil || got != want || want == "" {
				t.Errorf("Primary = %q, %v; the client says %q leads", got, err, want)
			}
		})
	}
}
