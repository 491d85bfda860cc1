package nemesis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
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
