// Package sshhosts makes hosts for the Docker tests of the SSH driver and
// of runs on hosts (--hosts): containers on this machine, each running
// its own sshd (Debian's openssh-server on the core node image), with
// NET_ADMIN for iptables (this machine's engine cannot start a privileged
// container, "unable to apply caps"), so their cgroups are read-only and
// they freeze with signals; no Docker inside. Their traffic stays on a
// network of their own, fc-ssh-<test id>, labelled as fencecheck's so
// that engine.DownAll (and `check cluster down`) removes it with the
// containers. The inventory is written to a file, as a user's would be.
//
// What it must never do: reach an address outside that network and the
// loopback, or leave a container or network behind a test (each is
// removed by the test's cleanup).
package sshhosts

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"
	"golang.org/x/crypto/ssh"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// dockerfile is the test hosts' image on the core node image: sshd, and
// sudo for a login that is not root (fc, password-less sudo). At start
// each login's authorized_keys is the test's key (FC_AUTHORIZED_KEY).
const dockerfile = `FROM %s
RUN set -eux; printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 0755 /usr/sbin/policy-rc.d; \
    apt-get update; DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openssh-server sudo; \
    rm -f /usr/sbin/policy-rc.d; apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin; \
    mkdir -p /run/sshd; \
    printf 'PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nUseDNS no\nMaxSessions 100\nMaxStartups 100:30:200\n' > /etc/ssh/sshd_config.d/fencecheck.conf; \
    useradd -m -s /bin/sh fc; usermod -p '*' fc; echo 'fc ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/fc; chmod 0440 /etc/sudoers.d/fc
CMD ["/bin/sh", "-c", "for u in root fc; do h=$(getent passwd $u | cut -d: -f6); mkdir -p $h/.ssh; printf '%%s\\n' \"$FC_AUTHORIZED_KEY\" > $h/.ssh/authorized_keys; chown -R $u $h/.ssh; chmod 700 $h/.ssh; chmod 600 $h/.ssh/authorized_keys; done; exec /usr/sbin/sshd -D -e"]
`

// Host is one host container to start.
type Host struct {
	Role    string // server, storage or client
	User    string // root when ""
	Freezer string // "" for auto
}

// Options tune Start.
type Options struct {
	// Remove are paths the hosts' image carries that the hosts of the
	// test must not have (the core image's compiled etcd, for a run that
	// must install its own): removed in an image layer of their own.
	Remove []string
}

// Fixture is the hosts of one test.
type Fixture struct {
	ID      string
	Cli     *client.Client
	File    string            // the inventory file
	Gateway string            // the network's gateway: the control machine as the hosts see it
	IP      map[string]string // by node name
	// Container is each host's container id, by node name.
	Container map[string]string
}

var image struct {
	once sync.Once
	tag  string
	err  error
}

// Image builds the hosts' image once per test process (a tag that is a
// hash of the core image's and the Dockerfile: kept across runs by the
// engine's cache), outside the test's budget.
func Image(t testing.TB, cli *client.Client) string {
	t.Helper()
	image.once.Do(func() {
		dockertest.OutsideBudget(t, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
			defer cancel()
			core, err := images.EnsureCoreImage(ctx, cli, dockertest.LogWriter(t))
			if err != nil {
				image.err = err
				return
			}
			df := fmt.Sprintf(dockerfile, core)
			sum := sha256.Sum256([]byte(df))
			tag := "fencecheck/test-sshhost:" + hex.EncodeToString(sum[:])[:12]
			if ok, err := engine.ImageExists(ctx, cli, tag); err != nil || ok {
				image.tag, image.err = tag, err
				return
			}
			if err := buildImage(ctx, t, cli, tag, df); err != nil {
				image.err = err
				return
			}
			image.tag = tag
		})
	})
	if image.err != nil {
		t.Fatalf("the test hosts' image: %v", image.err)
	}
	return image.tag
}

// buildImage builds the one-file Dockerfile df as tag.
func buildImage(ctx context.Context, t testing.TB, cli *client.Client, tag, df string) error {
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), Typeflag: tar.TypeReg})
	tw.Write([]byte(df))
	tw.Close()
	start := time.Now()
	resp, err := cli.ImageBuild(ctx, &ctxTar, build.ImageBuildOptions{
		Tags: []string{tag}, Dockerfile: "Dockerfile", Remove: true, ForceRemove: true, Version: build.BuilderV1,
		Labels: map[string]string{engine.LabelFencecheck + ".test-image": "sshhost"},
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, dockertest.LogWriter(t), 0, false, nil); err != nil {
		return fmt.Errorf("building %s: %w", tag, err)
	}
	t.Logf("built %s in %s", tag, time.Since(start).Round(time.Millisecond))
	return nil
}

// without is the hosts' image with paths removed in a layer of its own:
// deleting them in a running container instead leaves the image's copy
// underneath, which this machine's storage driver showed again once a
// file written over it was removed (the run's wipe of its etcd brought
// back the image's, mtime 1970, one inode in every container).
func without(t testing.TB, cli *client.Client, base string, paths []string) string {
	t.Helper()
	df := fmt.Sprintf("FROM %s\nRUN rm -rf -- %s\n", base, strings.Join(paths, " "))
	sum := sha256.Sum256([]byte(df))
	tag := "fencecheck/test-sshhost:" + hex.EncodeToString(sum[:])[:12]
	var err error
	dockertest.OutsideBudget(t, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var ok bool
		if ok, err = engine.ImageExists(ctx, cli, tag); err != nil || ok {
			return
		}
		err = buildImage(ctx, t, cli, tag, df)
	})
	if err != nil {
		t.Fatalf("the test hosts' image without %v: %v", paths, err)
	}
	return tag
}

// Start starts one host container per entry of hosts on a network of the
// test's own and writes their inventory (every host wipe: true, named
// n1.., storage, c1.. in the order given). Everything is removed when the
// test ends.
func Start(t testing.TB, hosts []Host, opts Options) *Fixture {
	t.Helper()
	cli := dockertest.Engine(t, engine.Connect)
	img := Image(t, cli)
	if len(opts.Remove) > 0 {
		img = without(t, cli, img, opts.Remove)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := &Fixture{ID: dockertest.TestID(), Cli: cli, IP: map[string]string{}, Container: map[string]string{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := engine.DownAll(ctx, cli, f.ID); err != nil {
			t.Errorf("removing the test hosts: %v", err)
		}
	})
	labels := map[string]string{engine.LabelFencecheck: "1", engine.LabelTest: f.ID}
	netName := "fc-ssh-" + f.ID
	if _, err := cli.NetworkCreate(ctx, netName, network.CreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		t.Fatalf("creating %s: %v", netName, err)
	}
	ni, err := cli.NetworkInspect(ctx, netName, network.InspectOptions{})
	if err != nil || len(ni.IPAM.Config) == 0 {
		t.Fatalf("inspecting %s: %v (%d IPAM configs)", netName, err, len(ni.IPAM.Config))
	}
	f.Gateway = ni.IPAM.Config[0].Gateway

	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "fencecheck-test")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))

	// An init reaps what the heal kills, as a host's init does.
	withInit := true
	counts := map[string]int{}
	var names []string
	for _, h := range hosts {
		counts[h.Role]++
		name := map[string]string{"server": "n", "client": "c"}[h.Role] + fmt.Sprint(counts[h.Role])
		if h.Role == "storage" {
			name = "storage"
		}
		cname := "fc-" + f.ID + "-ssh-" + name
		created, err := cli.ContainerCreate(ctx, &container.Config{
			Image: img, Hostname: name, Labels: labels, Env: []string{"FC_AUTHORIZED_KEY=" + authorized},
		}, &container.HostConfig{CapAdd: []string{"NET_ADMIN"}, Init: &withInit}, &network.NetworkingConfig{
			EndpointsConfig: map[string]*network.EndpointSettings{netName: {}},
		}, nil, cname)
		if err != nil {
			t.Fatalf("creating %s: %v", cname, err)
		}
		if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			t.Fatalf("starting %s: %v", cname, err)
		}
		info, err := cli.ContainerInspect(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		f.IP[name] = info.NetworkSettings.Networks[netName].IPAddress
		f.Container[name] = created.ID
		names = append(names, name)
	}
	for _, n := range names {
		for _, p := range opts.Remove {
			if out, err := f.Sh(ctx, n, "[ ! -e "+p+" ] || echo "+p); err != nil || strings.TrimSpace(out) != "" {
				t.Fatalf("%s holds %s, which its image removed: %v", n, p, err)
			}
		}
	}
	// Every container of the image has the host keys made when sshd was
	// installed: read them once, from the first.
	hostKey := readFile(t, cli, f.Container[names[0]], "/etc/ssh/ssh_host_ed25519_key.pub")
	var known strings.Builder
	for _, n := range names {
		fields := strings.Fields(hostKey)
		fmt.Fprintf(&known, "%s %s %s\n", f.IP[n], fields[0], fields[1])
	}
	knownFile := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownFile, []byte(known.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var yml strings.Builder
	fmt.Fprintf(&yml, "known_hosts: %s\nkey: %s\nhosts:\n", knownFile, keyFile)
	for i, h := range hosts {
		user := h.User
		if user == "" {
			user = "root"
		}
		fmt.Fprintf(&yml, "  - name: %s\n    address: %s:22\n    user: %s\n    role: %s\n    wipe: true\n", names[i], f.IP[names[i]], user, h.Role)
		if h.Freezer != "" {
			fmt.Fprintf(&yml, "    freezer: %s\n", h.Freezer)
		}
	}
	f.File = filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(f.File, []byte(yml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd listens a moment after the container starts.
	for _, n := range names {
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", f.IP[n]+":22", time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sshd of %s does not listen after 30 s: %v", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return f
}

// readFile reads one file of a container.
func readFile(t testing.TB, cli *client.Client, id, path string) string {
	t.Helper()
	rc, _, err := cli.CopyFromContainer(context.Background(), id, path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Sh runs script with sh in node's container through the engine (not
// over SSH: what a test asks of a host must not go through the driver
// under test) and returns what it printed; a script that fails is an
// error carrying its output.
func (f *Fixture) Sh(ctx context.Context, node, script string) (string, error) {
	id, ok := f.Container[node]
	if !ok {
		return "", fmt.Errorf("no host %s", node)
	}
	ex, err := f.Cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: []string{"sh", "-c", script}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", err
	}
	att, err := f.Cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", err
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		return out.String(), err
	}
	in, err := f.Cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return out.String(), err
	}
	if in.ExitCode != 0 {
		return out.String(), fmt.Errorf("%s in %s: exit %d: %s", script, node, in.ExitCode, out.String())
	}
	return out.String(), nil
}
