package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input is refused before anything is created: no store directory,
// no report, no JUnit file, no store/latest, and the reason said once.
func TestBadCombinationsCreateNothing(t *testing.T) {
	cases := map[string]struct {
		args []string
		flag string
		want string
	}{
		"partition in process":      {[]string{"--backend", "memory", "--nemesis", "partition"}, "nemesis", "needs the servers and network of --cluster docker"},
		"kill in process":           {[]string{"--backend", "memory", "--nemesis", "pause,kill"}, "nemesis", "needs the servers and network of --cluster docker"},
		"partition one server":      {[]string{"--backend", "postgres", "--nemesis", "partition-halves"}, "nemesis", "runs on 1 server node"},
		"partition setnx":           {[]string{"--backend", "redis", "--recipe", "setnx", "--nemesis", "partition-ring"}, "nemesis", "runs on 1 server node"},
		"name escapes":              {[]string{"--name", "../../escape"}, "name", "one name"},
		"name with a slash":         {[]string{"--name", "a/b"}, "name", "one name"},
		"name dot-dot":              {[]string{"--name", ".."}, "name", "one name"},
		"name latest":               {[]string{"--name", "latest"}, "name", "store/latest"},
		"nodes on memory":           {[]string{"--backend", "memory", "--nodes", "4"}, "nodes", "backend memory runs one server"},
		"nodes on memory docker":    {[]string{"--backend", "memory", "--cluster", "docker", "--nodes", "3"}, "nodes", "drop the flag"},
		"nodes on postgres":         {[]string{"--backend", "postgres", "--nodes", "5"}, "nodes", "backend postgres runs one server"},
		"nodes on redis":            {[]string{"--backend", "redis", "--recipe", "redlock", "--nodes", "5"}, "nodes", "--recipe"},
		"nodes 0 on etcd":           {[]string{"--backend", "etcd", "--nodes", "0"}, "nodes", "accepted: 1, 3, 5"},
		"one nats server":           {[]string{"--backend", "nats", "--nodes", "1"}, "nodes", "one server would be standalone JetStream"},
		"one zookeeper server":      {[]string{"--backend", "zookeeper", "--nodes", "1"}, "nodes", "ZooKeeper's standalone mode"},
		"etcd 3.4.23 exactly":       {[]string{"--backend", "etcd", "--server-version", "3.4.23"}, "server-version", "3.4 is Debian's package"},
		"etcd v3.5.4":               {[]string{"--backend", "etcd", "--server-version", "v3.5.4"}, "server-version", "not an exact etcd release"},
		"etcd 3.5.98 unserved":      {[]string{"--backend", "etcd", "--server-version", "3.5.98"}, "server-version", "does not serve etcd 3.5.98"},
		"nats 2.9.10 exactly":       {[]string{"--backend", "nats", "--server-version", "2.9.10"}, "server-version", "2.9 is Debian's package"},
		"nats 2.10.99 unserved":     {[]string{"--backend", "nats", "--server-version", "2.10.99"}, "server-version", "does not serve nats-server 2.10.99"},
		"nodes 4 on zookeeper":      {[]string{"--backend", "zookeeper", "--nodes", "4"}, "nodes", "accepted: 3, 5"},
		"pause-duration 0":          {[]string{"--nemesis", "pause", "--pause-duration", "0"}, "pause-duration", "must be positive"},
		"pause-duration no fault":   {[]string{"--nemesis", "none", "--pause-duration", "3s"}, "pause-duration", "--nemesis none"},
		"power on memory":           {[]string{"--backend", "memory", "--cluster", "docker", "--nemesis", "power-loss"}, "nemesis", "keep nothing on a disk"},
		"power from an image":       {[]string{"--backend", "redis", "--server-image", "redis:7.2", "--nemesis", "power-loss-all"}, "nemesis", "the filesystem under its data directory"},
		"power layer on memory":     {[]string{"--backend", "memory", "--cluster", "docker", "--power-layer"}, "power-layer", "keep nothing on a disk"},
		"power layer from an image": {[]string{"--backend", "redis", "--server-image", "redis:7.2", "--power-layer"}, "power-layer", "does not use"},
		"no-fsync on etcd 3.4":      {[]string{"--backend", "etcd", "--server-version", "3.4", "--etcd-unsafe-no-fsync", "true"}, "etcd-unsafe-no-fsync", "came with 3.5"},
		"force-sync maybe":          {[]string{"--backend", "zookeeper", "--zookeeper-force-sync", "maybe"}, "zookeeper-force-sync", "yes or no"},
	}
	// An exact release is asked of the module proxy: here one with
	// nothing in it, so no release is served.
	t.Setenv("GOPROXY", "file://"+t.TempDir())
	for name, c := range cases {
		base := t.TempDir()
		store := filepath.Join(base, "store")
		junit := filepath.Join(base, "junit.xml")
		args := append([]string{"--store", store, "--junit", junit, "--time-limit", "2s"}, c.args...)
		code, out, stderr := runCLI(t, args...)
		if code != 254 {
			t.Errorf("%s: exit %d, want 254\n%s%s", name, code, out, stderr)
			continue
		}
		if !strings.HasPrefix(stderr, "check: --"+c.flag+": ") || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: stderr %q, want it to start with check: --%s: and say %q", name, stderr, c.flag, c.want)
		}
		if n := strings.Count(out+stderr, "--"+c.flag+":"); n != 1 {
			t.Errorf("%s: the reason is said %d times, want once:\n%s%s", name, n, out, stderr)
		}
		entries, _ := os.ReadDir(base)
		if len(entries) != 0 {
			t.Errorf("%s: something was created before the input was refused: %v", name, entries)
		}
	}
	// A name that escapes the store writes nothing beside it either.
	if _, err := os.Stat(filepath.Join(filepath.Dir(t.TempDir()), "escape")); err == nil {
		t.Error("--name ../../escape made a directory outside the store")
	}
}

// The defaults of flags that mean nothing for a backend never fail; the
// same flags given with values that mean something pass.
func TestGivenFlagsThatApplyAreAccepted(t *testing.T) {
	store := t.TempDir()
	common := []string{"--store", store, "--backend", "memory", "--time-limit", "1s", "--lease-ttl", "100ms", "--nemesis-interval", "200ms", "--fencing", "all"}
	for _, extra := range [][]string{
		{"--nemesis", "none"},
		{"--nemesis", "pause", "--pause-duration", "300ms"},
		{"--nemesis", "pause", "--name", "my-test.v2"},
	} {
		code, out, stderr := runCLI(t, append(common, extra...)...)
		if code != 0 {
			t.Errorf("%v: exit %d, want 0\n%s%s", extra, code, out, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(store, "my-test.v2")); err != nil {
		t.Errorf("--name my-test.v2: %v", err)
	}
}
