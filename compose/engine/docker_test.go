package engine_test

// Integration tests against the real Docker engine. Whether they run is
// internal/dockertest's rule (skipped under -short, and when no daemon
// answers, except under CI=true, where they run or fail). The first run
// builds the node image (debootstrap, apt, etcd 3.6): give it
// `-timeout 30m`.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

func TestDockerUpMissingImage(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	id := dockertest.TestID()
	ctx := context.Background()
	_, err := engine.Up(ctx, cli, engine.Spec{TestID: id, Image: "fencecheck/node:000000000000", Servers: 1})
	if err == nil || !strings.Contains(err.Error(), "check image build") {
		t.Fatalf("Up with a missing image: %v", err)
	}
	if left, err := engine.List(ctx, cli, id); err != nil || len(left) != 0 {
		t.Fatalf("leftovers after a failed Up: %v %v", left, err)
	}
}

func TestDockerCluster(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	tag := dockertest.NodeImage(t, cli, images.EnsureImage)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	id := dockertest.TestID()
	t.Cleanup(func() {
		if err := engine.DownAll(context.Background(), cli, id); err != nil {
			t.Errorf("DownAll: %v", err)
		}
	})
	bin := filepath.Join(t.TempDir(), "check")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho check-ran \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := engine.Up(ctx, cli, engine.Spec{TestID: id, Image: tag, Servers: 3, Storage: true, Clients: 2, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Up of 6 nodes took %s", time.Since(start).Round(time.Millisecond))

	var names []string
	ips := map[string]string{}
	for _, n := range c.Containers {
		names = append(names, n.Name+"/"+n.Role)
		if n.IP == "" || n.ContainerID == "" {
			t.Errorf("node %s has IP %q, container %q", n.Name, n.IP, n.ContainerID)
		}
		ips[n.Name] = n.IP
	}
	if got, want := strings.Join(names, " "), "n1/server n2/server n3/server storage/storage c1/client c2/client"; got != want {
		t.Fatalf("nodes %q, want %q", got, want)
	}

	t.Run("network", func(t *testing.T) {
		nw, err := cli.NetworkInspect(ctx, c.Network, network.InspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !nw.Internal || nw.Labels[engine.LabelTest] != id || nw.Labels[engine.LabelFencecheck] != "1" {
			t.Errorf("network %s: internal %v, labels %v", c.Network, nw.Internal, nw.Labels)
		}
		info, err := cli.ContainerInspect(ctx, c.Containers[0].ContainerID)
		if err != nil {
			t.Fatal(err)
		}
		// The engine reports the capability as it stored it: CAP_NET_ADMIN.
		if caps := strings.Join(info.HostConfig.CapAdd, ","); info.HostConfig.Privileged || strings.TrimPrefix(caps, "CAP_") != "NET_ADMIN" {
			t.Errorf("privileged %v, caps %v", info.HostConfig.Privileged, info.HostConfig.CapAdd)
		}
		if info.Name != "/"+engine.ContainerName(id, "n1") || info.Config.Hostname != "n1" {
			t.Errorf("name %q, hostname %q", info.Name, info.Config.Hostname)
		}
	})

	t.Run("servers", func(t *testing.T) {
		for _, tc := range []struct {
			cmd  []string
			want string
		}{
			{[]string{"etcd", "--version"}, "etcd Version: 3.4.23"},
			{[]string{"/usr/local/bin/etcd-3.6", "--version"}, "etcd Version: 3.6."},
			{[]string{"/usr/lib/postgresql/15/bin/postgres", "--version"}, "(PostgreSQL) 15."},
			{[]string{"redis-server", "--version"}, "Redis server v=7."},
			{[]string{"sh", "-c", "test -x /usr/share/zookeeper/bin/zkServer.sh && ls /usr/share/java/zookeeper.jar && java -version 2>&1"}, "/usr/share/java/zookeeper.jar"},
			{[]string{"sh", "-c", "iptables --version; tc -V; ps --version; ip -V"}, "iptables v1.8"},
			{[]string{"check", "x"}, "check-ran x"},
		} {
			res, err := c.Exec(ctx, "n1", tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			out := res.Stdout + res.Stderr
			if res.ExitCode != 0 || !strings.Contains(out, tc.want) {
				t.Errorf("%v: exit %d, output %q; want %q", tc.cmd, res.ExitCode, out, tc.want)
			}
		}
		// ZooKeeper starts on the headless Java runtime (the image replaces
		// the default-jre that Debian's zookeeper asks for).
		execID, err := c.ExecDetached(ctx, "storage", []string{"sh", "-c",
			"exec /usr/share/zookeeper/bin/zkServer.sh start-foreground >/tmp/zk.log 2>&1"}, engine.ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var srvr string
		for i := 0; i < 100 && !strings.Contains(srvr, "Mode: standalone"); i++ {
			time.Sleep(200 * time.Millisecond)
			// A server still starting may accept and never answer: bound
			// each try.
			res, err := c.Exec(ctx, "storage", []string{"timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/2181 && printf srvr >&3 && cat <&3"})
			if err != nil {
				t.Fatal(err)
			}
			srvr = res.Stdout
		}
		if running, _, _, err := c.ExecState(ctx, execID); !strings.Contains(srvr, "Mode: standalone") || !running || err != nil {
			log, _ := c.CopyFrom(ctx, "storage", "/tmp/zk.log")
			t.Errorf("zookeeper: srvr said %q, running %v, %v; log:\n%s", srvr, running, err, log)
		}

		// Nothing runs in a node but init and sleep until someone starts it.
		res, err := c.Exec(ctx, "n2", []string{"ps", "-e", "-o", "comm="})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(res.Stdout); strings.Join(got, " ") != "docker-init sleep ps" {
			t.Errorf("processes in a fresh node: %q", got)
		}
	})

	t.Run("exec", func(t *testing.T) {
		res, err := c.Exec(ctx, "c1", []string{"sh", "-c", "echo out; echo err >&2; exit 7"})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 7 || res.Stdout != "out\n" || res.Stderr != "err\n" {
			t.Errorf("got %+v", res)
		}
		res, err = c.ExecWith(ctx, "c1", []string{"sh", "-c", "id -un; cat"}, engine.ExecOptions{User: "postgres", Stdin: strings.NewReader("in")})
		if err != nil || res.Stdout != "postgres\nin" {
			t.Errorf("as postgres with stdin: %+v, %v", res, err)
		}
		// The container has NET_ADMIN; a privileged exec has every capability.
		for _, cmd := range [][]string{
			{"iptables", "-w", "-N", "FENCE"},
			{"iptables", "-w", "-I", "INPUT", "1", "-j", "FENCE"},
			{"iptables", "-w", "-F", "FENCE"},
			// This kernel may lack netem (the test machine's has no netem, prio
			// or fq_codel); tbf is enough to show that tc may change qdiscs.
			{"tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "100mbit", "burst", "32kbit", "latency", "50ms"},
			{"tc", "qdisc", "del", "dev", "eth0", "root"},
		} {
			res, err := c.ExecPrivileged(ctx, "n3", cmd)
			if err != nil || res.ExitCode != 0 {
				t.Errorf("%v: %+v, %v", cmd, res, err)
			}
		}
		t.Logf("privileged execs work on this engine: %v", engine.PrivilegedExecsWork(c))
		res, err = c.Exec(ctx, "n3", []string{"sh", "-c", "iptables -w -S FENCE; tc qdisc show dev eth0"})
		if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "-N FENCE") {
			t.Errorf("iptables without privilege: %+v, %v", res, err)
		}
		if _, err := c.Exec(ctx, "n9", []string{"true"}); err == nil {
			t.Error("exec in a missing node: no error")
		}
	})

	t.Run("dns", func(t *testing.T) {
		all := []string{"n1", "n2", "n3", "storage", "c1", "c2"}
		res, err := c.Exec(ctx, "c2", append([]string{"getent", "ahostsv4"}, all...))
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("getent: %+v %v", res, err)
		}
		for _, name := range all {
			res, err := c.Exec(ctx, "c2", []string{"getent", "ahostsv4", name})
			if err != nil {
				t.Fatal(err)
			}
			if f := strings.Fields(res.Stdout); len(f) == 0 || f[0] != ips[name] {
				t.Errorf("c2 resolves %s to %q, want %s", name, res.Stdout, ips[name])
			}
		}
		// A real server, reached by name over TCP from another node.
		res, err = c.Exec(ctx, "n2", []string{"redis-server", "--port", "7000", "--daemonize", "yes",
			"--protected-mode", "no", "--save", "", "--logfile", "/tmp/redis.log"})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("starting redis: %+v %v", res, err)
		}
		var out string
		for i := 0; i < 50; i++ {
			res, err = c.Exec(ctx, "c1", []string{"bash", "-c",
				`exec 3<>/dev/tcp/n2/7000 && printf 'PING\r\n' >&3 && head -c 7 <&3`})
			if err != nil {
				t.Fatal(err)
			}
			if out = res.Stdout; strings.HasPrefix(out, "+PONG") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !strings.HasPrefix(out, "+PONG") {
			t.Errorf("c1 -> n2:7000 said %q (stderr %q)", out, res.Stderr)
		}
		c.Exec(ctx, "n2", []string{"pkill", "redis-server"})
	})

	t.Run("stream", func(t *testing.T) {
		s, err := c.ExecStream(ctx, "c1", []string{"sh", "-c", "cat; echo done >&2; exit 3"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := io.WriteString(s.Stdin, "hello\n"); err != nil {
			t.Fatal(err)
		}
		line := make([]byte, 6)
		if _, err := io.ReadFull(s.Stdout, line); err != nil || string(line) != "hello\n" {
			t.Fatalf("echo: %q %v", line, err)
		}
		if _, err := io.WriteString(s.Stdin, "world"); err != nil {
			t.Fatal(err)
		}
		s.Stdin.Close()
		rest, err := io.ReadAll(s.Stdout)
		if err != nil || string(rest) != "world" {
			t.Errorf("after closing stdin: %q %v", rest, err)
		}
		stderr, _ := io.ReadAll(s.Stderr)
		code, err := s.Wait()
		if err != nil || code != 3 || string(stderr) != "done\n" {
			t.Errorf("Wait = %d, %v; stderr %q", code, err, stderr)
		}
	})

	t.Run("copy", func(t *testing.T) {
		content := []byte("line one\nline two\n")
		if err := c.CopyTo(ctx, "storage", "/tmp/fc.conf", content, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := c.Exec(ctx, "storage", []string{"stat", "-c", "%a %U", "/tmp/fc.conf"})
		if err != nil || strings.TrimSpace(res.Stdout) != "600 root" {
			t.Errorf("stat: %+v %v", res, err)
		}
		got, err := c.CopyFrom(ctx, "storage", "/tmp/fc.conf")
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("CopyFrom: %q %v", got, err)
		}
		if _, err := c.CopyFrom(ctx, "storage", "/tmp/missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("CopyFrom of a missing file: %v", err)
		}
		if err := c.CopyTo(ctx, "storage", "/no/such/dir/f", content, 0o644); err == nil {
			t.Error("CopyTo into a missing directory: no error")
		}
	})

	t.Run("logs", func(t *testing.T) {
		if _, err := c.Exec(ctx, "n1", []string{"sh", "-c", "mkdir -p /var/log/fc && echo n1-log > /var/log/fc/server.log"}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		err := c.CollectLogs(ctx, dir, map[string][]string{"": {"/var/log/fc"}, "n1": {"/etc/hostname"}})
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "n1", "var", "log", "fc", "server.log")); err != nil || string(b) != "n1-log\n" {
			t.Errorf("n1 server.log: %q %v", b, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "n1", "etc", "hostname")); err != nil || string(b) != "n1\n" {
			t.Errorf("n1 hostname: %q %v", b, err)
		}
		for _, n := range c.Containers {
			if _, err := os.Stat(filepath.Join(dir, n.Name, "container.log")); err != nil {
				t.Error(err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "n2", "var", "log", "fc")); !os.IsNotExist(err) {
			t.Errorf("n2 has no /var/log/fc, yet: %v", err)
		}
	})

	t.Run("attach and list", func(t *testing.T) {
		a, err := engine.Attach(ctx, cli, id)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range a.Containers {
			if *n != *c.Containers[i] {
				t.Errorf("Attach node %d = %+v, want %+v", i, *n, *c.Containers[i])
			}
		}
		left, err := engine.List(ctx, cli, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 7 || left[6].Kind != "network" {
			t.Errorf("List = %v", left)
		}
		_, err = engine.Up(ctx, cli, engine.Spec{TestID: id, Image: tag, Servers: 1})
		if err == nil || !strings.Contains(err.Error(), "name already taken") {
			t.Errorf("second Up with the same test id: %v", err)
		}
	})

	// A paused node must not keep Down from removing it.
	if err := cli.ContainerPause(ctx, c.Containers[1].ContainerID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "n2", []string{"true"}); err == nil {
		t.Error("exec in a paused node: no error")
	} else {
		t.Logf("exec in a paused node: %v", err)
	}
	start = time.Now()
	if err := c.Down(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Down took %s", time.Since(start).Round(time.Millisecond))
	if err := c.Down(ctx); err != nil {
		t.Errorf("second Down: %v", err)
	}
	assertNothingLeft(t, cli, id)
}

func assertNothingLeft(t *testing.T, cli *client.Client, testID string) {
	t.Helper()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", engine.LabelTest+"="+testID))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil || len(cs) != 0 {
		t.Errorf("containers left: %d %v", len(cs), err)
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil || len(ns) != 0 {
		t.Errorf("networks left: %d %v", len(ns), err)
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil || len(vs.Volumes) != 0 {
		t.Errorf("volumes left: %d %v", len(vs.Volumes), err)
	}
	if _, err := cli.NetworkInspect(ctx, engine.NetworkName(testID), network.InspectOptions{}); err == nil {
		t.Errorf("network %s still exists", engine.NetworkName(testID))
	}
}

// A backend's own agent program rides in the agent image's one layer
// beside the check binary: both run in a node, and the image is another
// than the binary's alone.
func TestDockerAgentImageCarriesPrograms(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tag, err := images.EnsureCoreImage(ctx, cli, dockertest.LogWriter(t))
	if err != nil {
		t.Fatal(err)
	}
	id := dockertest.TestID()
	// The agent image is this test's own (the program names the test id):
	// removed once its container is.
	agentImage := ""
	t.Cleanup(func() {
		if err := engine.DownAll(context.Background(), cli, id); err != nil {
			t.Errorf("DownAll: %v", err)
		}
		if agentImage != "" {
			if _, err := cli.ImageRemove(context.Background(), agentImage, image.RemoveOptions{}); err != nil {
				t.Errorf("removing %s: %v", agentImage, err)
			}
		}
	})
	bin := filepath.Join(t.TempDir(), "check")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho check-ran \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prog := engine.Program{Path: engine.ProgramPath("check-example"), Data: []byte("#!/bin/sh\necho " + id + "-agent-ran \"$@\"\n")}
	c, err := engine.Up(ctx, cli, engine.Spec{TestID: id, Image: tag, Clients: 1, Binary: bin, Programs: []engine.Program{prog}})
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]string{"check x": "check-ran x", "check-example agent": id + "-agent-ran agent"} {
		res, err := c.Exec(ctx, "c1", strings.Fields(cmd))
		if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != want {
			t.Errorf("%s in c1: %+v, %v; want %q", cmd, res, err, want)
		}
	}
	info, err := cli.ContainerInspect(ctx, c.Containers[0].ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.Config.Image, engine.AgentImageRepo+":") {
		t.Fatalf("c1 runs %s, not an agent image", info.Config.Image)
	}
	agentImage = info.Config.Image
}
