package nemesis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/nemesis"
)

// TestDockerPowerLayer mounts the power faults' filesystem layer the way
// a power fault does (its Prepare step: a container of its own in the
// node's mount namespace), writes through it with the shell's tools
// (coreutils' sync FILE is an fsync of that file; dd oflag=dsync writes
// O_DSYNC), drops, and reads what is left: the rules of docs/power-loss.md.
// Then it pauses the node again and again while a process writes through
// the layer: every freeze must complete, since the layer's daemon is not
// in the frozen cgroup.
func TestDockerPowerLayer(t *testing.T) {
	c := up(t, 1, false, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const dir = "/var/lib/fencecheck/layertest"
	env := &nemesis.Env{Cluster: c, ServerNodes: []string{"n1"}, Settings: nemesis.Settings{Backend: "test", Docker: true, Servers: 1, DataDir: dir}, Log: t.Logf}
	start := time.Now()
	if err := nemesis.Prepare(ctx, []string{"power-loss"}, env); err != nil {
		t.Fatal(err)
	}
	t.Logf("the layer served in %s", time.Since(start).Round(time.Millisecond))
	if out := sh(t, c, "n1", "grep ' "+dir+" ' /proc/mounts"); !strings.Contains(out, "fuse.lossyfs") {
		t.Fatalf("no layer mounted at %s: %s", dir, out)
	}
	sh(t, c, "n1", fmt.Sprintf(`set -e; cd %s
echo unsynced > written
echo synced > synced; sync synced
echo synced > appended; sync appended; echo appended >> appended
echo 0123456789 > truncated; sync truncated; truncate -s 2 truncated
printf odsync | dd of=odsync oflag=dsync status=none
echo content > tmp; mv tmp renamed
echo content > tmp2; sync tmp2; mv tmp2 renamed-synced
echo gone > unlinked; sync unlinked; rm unlinked
mkdir sub; echo inside > sub/file
dd if=/dev/zero of=big bs=64k count=16 status=none; sync big; dd if=/dev/urandom of=big bs=4k count=3 seek=5 conv=notrunc status=none`, dir))
	// The disk below holds only what was synced.
	if out := sh(t, c, "n1", fmt.Sprintf("cat %s/written %s/appended", nemesis.DiskDir(dir), nemesis.DiskDir(dir))); out != "synced\n" {
		t.Errorf("the disk below holds %q for written+appended before any drop, want only the synced line", out)
	}
	before := sh(t, c, "n1", "md5sum "+dir+"/big | cut -c1-32")
	out := sh(t, c, "n1", engine.BinaryPath+" lossyfs drop")
	t.Logf("drop: %s", strings.TrimSpace(out))
	want := []struct{ file, content string }{
		{"written", ""},                 // written, not synced: gone
		{"synced", "synced\n"},          // synced: kept
		{"appended", "synced\n"},        // appended after a sync: back to the synced length
		{"truncated", "0123456789\n"},   // a truncation is data: undone
		{"odsync", "odsync"},            // O_DSYNC writes are synced writes
		{"renamed", ""},                 // the name is durable at once, the content never synced
		{"renamed-synced", "content\n"}, // synced, then renamed: kept under the new name
		{"sub/file", ""},                // the directory and the name stay, the content does not
	}
	var files, wantAll string
	for _, w := range want {
		files += " " + w.file
		wantAll += "[" + w.file + "]" + w.content
	}
	if got := sh(t, c, "n1", fmt.Sprintf("cd %s && for f in%s; do printf '[%%s]' $f; cat $f; done", dir, files)); got != wantAll {
		t.Errorf("after the drop the files read\n%q\nwant\n%q", got, wantAll)
	}
	if got := sh(t, c, "n1", fmt.Sprintf("ls %s; ls %s", dir, nemesis.DiskDir(dir))); strings.Count(got, "unlinked") != 0 || strings.Count(got, "tmp") != 0 {
		t.Errorf("an unlinked or renamed-away name is back after the drop:\n%s", got)
	}
	if after := sh(t, c, "n1", "md5sum "+dir+"/big | cut -c1-32"); after == before || sh(t, c, "n1", fmt.Sprintf("cmp %s/big /dev/zero 2>&1 | grep -c EOF || true", dir)) != "1\n" {
		t.Errorf("the overwritten middle of a synced file was not dropped back to zeros (md5 %s before, %s after)", before, after)
	}

	// The deadlock a freeze could meet (a server task waiting on a FUSE
	// request whose daemon is frozen first cannot itself freeze) needs the
	// daemon in the frozen cgroup: it is not. The layer's process is
	// visible in the node (it shares the node's PID namespace) and its
	// freezer cgroup is its own container's.
	cg := sh(t, c, "n1", `pid=$(for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null | grep -q '^`+engine.BinaryPath+` lossyfs serve' && echo ${p#/proc/}; done | head -n 1)
[ -n "$pid" ] || { echo "no layer process in the node"; exit 1; }
grep freezer /proc/$pid/cgroup; grep freezer /proc/1/cgroup`)
	if lines := strings.Fields(cg); len(lines) != 2 || lines[0] == lines[1] {
		t.Errorf("the layer's freezer cgroup and the node's: %q, want two different ones", cg)
	}

	// Pauses while a process writes through the layer: every one must
	// end frozen, none may hang. runc gives a freeze a short budget and
	// thaws when it runs out ("unable to freeze"), which happens on a
	// loaded machine without FUSE too; a refused freeze is tried again,
	// and counted.
	sh(t, c, "n1", fmt.Sprintf(`nohup sh -c 'i=0; while :; do i=$((i+1)); echo $i >> %s/w; done' >/dev/null 2>&1 &`, dir))
	start = time.Now()
	refused := 0
	for i := 0; i < 20; i++ {
		var err error
		for try := 0; try < 5; try++ {
			pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
			err = c.Pause(pctx, "n1")
			pcancel()
			if err == nil || !strings.Contains(err.Error(), "unable to freeze") {
				break
			}
			refused++
		}
		if err != nil {
			t.Fatalf("pause %d of a node writing through the layer: %v", i+1, err)
		}
		time.Sleep(20 * time.Millisecond)
		if err := c.Unpause(ctx, "n1"); err != nil {
			t.Fatalf("unpause %d: %v", i+1, err)
		}
	}
	t.Logf("20 pauses of a node writing through the layer in %s (%d freezes refused by runc's budget and tried again)", time.Since(start).Round(time.Millisecond), refused)
	w1 := sh(t, c, "n1", "wc -c < "+dir+"/w")
	time.Sleep(200 * time.Millisecond)
	if w2 := sh(t, c, "n1", "wc -c < "+dir+"/w"); w1 == w2 {
		t.Errorf("the writer stopped after the pauses (%s bytes)", strings.TrimSpace(w2))
	}
}

// writerService is a "lock service" for the power faults' test: a shell
// loop in each node appending a numbered line to DIR/log.wal and syncing
// it (coreutils' sync FILE: an fsync), one line a sync, so what survives
// a cut says exactly which syncs reached the disk.
type writerService struct{ dir string }

const writerPid = "/tmp/fc-writer.pid"

func (w writerService) Kill(ctx context.Context, c nodes.Nodes, node string) error {
	_, err := c.Exec(ctx, node, []string{"sh", "-c", "kill -9 $(cat " + writerPid + ") 2>/dev/null; true"})
	return err
}

func (w writerService) Start(ctx context.Context, c nodes.Nodes, node string) error {
	_, err := c.Exec(ctx, node, []string{"sh", "-c", fmt.Sprintf(`cd /; nohup sh -c 'echo $$ > %s; i=$(wc -l < %[2]s/log.wal 2>/dev/null || echo 0); while :; do i=$((i+1)); echo rec$i >> %[2]s/log.wal; sync %[2]s/log.wal; done' >/dev/null 2>&1 &`, writerPid, w.dir)})
	return err
}

func (w writerService) Primary(context.Context, nodes.Nodes) (string, error) { return "n1", nil }

// TestDockerPowerCutAimedAndAtOneInstant cuts three nodes' power the two
// ways a power fault can: aimed (--power-at before-sync:3: each node's
// layer freezes before the third sync of its log from the fault's start,
// so its log keeps every line up to the one that sync would have made
// durable, whole, and not that one) and at the schedule's moment with
// --power-silent (every layer armed with one instant, each node's
// network dropped first). The fault's start is announced before anything
// is done to a node, and Stop brings network and writers back.
func TestDockerPowerCutAimedAndAtOneInstant(t *testing.T) {
	c := up(t, 3, false, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const dir = "/var/lib/fencecheck/aimed"
	nodes := []string{"n1", "n2", "n3"}
	var mu sync.Mutex
	var logged []string
	db := writerService{dir: dir}
	env := &nemesis.Env{Cluster: c, ServerNodes: nodes, DB: db,
		Settings: nemesis.Settings{Backend: "test", Docker: true, Servers: 3, DataDir: dir, DataLog: "*.wal",
			Options: map[string]string{"power-at": "before-sync:3"}},
		Log: func(format string, args ...any) {
			mu.Lock()
			logged = append(logged, fmt.Sprintf(format, args...))
			mu.Unlock()
			t.Logf(format, args...)
		}}
	if err := nemesis.Prepare(ctx, []string{"power-loss-all"}, env); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := db.Start(ctx, c, n); err != nil {
			t.Fatal(err)
		}
	}
	cut := func(opts map[string]string) (announcedAt time.Time) {
		t.Helper()
		env.Settings.Options = opts
		faults, err := nemesis.Build(ctx, []string{"power-loss-all"}, env)
		if err != nil {
			t.Fatal(err)
		}
		f := faults[0].(nemesis.Announcer)
		time.Sleep(500 * time.Millisecond) // the writers write
		ts, err := f.StartAnnounced(ctx, rand.New(rand.NewPCG(1, 2)), func(ts []string) {
			announcedAt = time.Now()
			if len(ts) != 3 {
				t.Errorf("announced %v, want every node", ts)
			}
		})
		if err != nil || len(ts) != 3 {
			t.Fatalf("the cut: %v, %v", ts, err)
		}
		for _, n := range nodes {
			if out := sh(t, c, n, "kill -0 $(cat "+writerPid+") 2>/dev/null && echo alive || echo dead"); out != "dead\n" {
				t.Errorf("%s's writer is %s after its cut", n, strings.TrimSpace(out))
			}
			// Whole lines, numbered without a gap: the cut lost a tail,
			// never a line in the middle or part of one.
			log := sh(t, c, n, "cat "+dir+"/log.wal")
			lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
			for i, l := range lines {
				if l != fmt.Sprintf("rec%d", i+1) {
					t.Fatalf("%s's log after the cut: line %d is %q (log %q)", n, i+1, l, log)
				}
			}
		}
		if opts["power-silent"] == "true" {
			for _, n := range nodes {
				res, err := c.ExecPrivileged(ctx, n, []string{"sh", "-c", "iptables -w -S INPUT; iptables -w -S OUTPUT"})
				if err != nil || strings.Count(res.Stdout, "-j DROP") != 2 {
					t.Errorf("%s's network during a silent cut: %v %s", n, err, res.Stdout)
				}
			}
		}
		t.Cleanup(func() { faults[0].Stop(context.Background()) })
		if err := faults[0].Stop(ctx); err != nil {
			t.Fatal(err)
		}
		return announcedAt
	}

	start := time.Now()
	cut(map[string]string{"power-at": "before-sync:3"})
	mu.Lock()
	froze := 0
	for _, l := range logged {
		if strings.Contains(l, "before sync 3 of log.wal") {
			froze++
		}
	}
	mu.Unlock()
	if froze != 3 {
		t.Errorf("%d nodes froze before the third sync of their log, want 3:\n%s", froze, strings.Join(logged, "\n"))
	}
	t.Logf("the aimed cut of three nodes and their restart: %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	mu.Lock()
	logged = nil
	mu.Unlock()
	cut(map[string]string{"power-silent": "true"})
	mu.Lock()
	var apart string
	for _, l := range logged {
		if _, after, ok := strings.Cut(l, "lay "); ok && strings.Contains(l, "the cuts of") {
			apart = strings.TrimSuffix(after, " apart")
		}
	}
	mu.Unlock()
	// Each layer freezes at the instant by its own timer, so how far
	// apart the freezes lie is how late the busiest daemon's timer ran:
	// 9 ms on a quiet machine, 314 ms in CI's run of 2026-12-07 21:21
	// (two test streams at once; the harness's etcd run beside it saw
	// 568 ms). What the test holds is one instant for every node, not
	// this machine's scheduling: within a second.
	d, err := time.ParseDuration(apart)
	if err != nil || d > time.Second {
		t.Errorf("the cuts at one instant lay %q apart (%v), want within 1s", apart, err)
	}
	for _, n := range nodes {
		// Stop brought the network back and started the writer again.
		if out := sh(t, c, n, "kill -0 $(cat "+writerPid+") 2>/dev/null && echo alive || echo dead"); out != "alive\n" {
			t.Errorf("%s's writer is %s after the heal", n, strings.TrimSpace(out))
		}
		res, err := c.ExecPrivileged(ctx, n, []string{"sh", "-c", "iptables -w -S INPUT; iptables -w -S OUTPUT"})
		if err != nil || strings.Contains(res.Stdout, "DROP") {
			t.Errorf("%s's network after the heal: %v %s", n, err, res.Stdout)
		}
	}
	t.Logf("the silent cut of three nodes at one instant (%s apart) and their restart: %s", apart, time.Since(start).Round(time.Millisecond))
}
