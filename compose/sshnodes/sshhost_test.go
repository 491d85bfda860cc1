package sshnodes

// The test hosts: containers on this machine, each running its own sshd
// (Debian's openssh-server on the core node image), with NET_ADMIN for
// iptables (as the cluster's nodes: this machine's engine cannot start a
// privileged container, "unable to apply caps"), so their cgroups are
// read-only and they freeze with signals; no Docker inside. Their
// traffic stays on a network of their own, fc-ssh-<test id>, labelled as
// fencecheck's so that engine.DownAll (and `check cluster down`) removes
// it with the containers.

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
	"golang.org/x/crypto/ssh"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// sshHostDockerfile is the test hosts' image on the core node image:
// sshd, and sudo for a login that is not root (fc, password-less sudo).
// At start each login's authorized_keys is the test's key
// (FC_AUTHORIZED_KEY).
const sshHostDockerfile = `FROM %s
RUN set -eux; printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 0755 /usr/sbin/policy-rc.d; \
    apt-get update; DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openssh-server sudo; \
    rm -f /usr/sbin/policy-rc.d; apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin; \
    mkdir -p /run/sshd; \
    printf 'PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nUseDNS no\nMaxSessions 100\nMaxStartups 100:30:200\n' > /etc/ssh/sshd_config.d/fencecheck.conf; \
    useradd -m -s /bin/sh fc; usermod -p '*' fc; echo 'fc ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/fc; chmod 0440 /etc/sudoers.d/fc
CMD ["/bin/sh", "-c", "for u in root fc; do h=$(getent passwd $u | cut -d: -f6); mkdir -p $h/.ssh; printf '%%s\\n' \"$FC_AUTHORIZED_KEY\" > $h/.ssh/authorized_keys; chown -R $u $h/.ssh; chmod 700 $h/.ssh; chmod 600 $h/.ssh/authorized_keys; done; exec /usr/sbin/sshd -D -e"]
`

// testHost is one host container to start.
type testHost struct {
	Role    string
	User    string // root when ""
	Freezer string // "" for auto
}

// fixture is the hosts of one test.
type fixture struct {
	id      string
	cli     *client.Client
	inv     *Inventory
	gateway string            // the network's gateway: the control machine as the hosts see it
	ip      map[string]string // by node name
}

var sshImage struct {
	once sync.Once
	tag  string
	err  error
}

// ensureSSHHostImage builds the hosts' image once per test process (a
// tag that is a hash of the core image's and the Dockerfile: kept across
// runs by the engine's cache).
func ensureSSHHostImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	sshImage.once.Do(func() {
		dockertest.OutsideBudget(t, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
			defer cancel()
			core, err := images.EnsureCoreImage(ctx, cli, dockertest.LogWriter(t))
			if err != nil {
				sshImage.err = err
				return
			}
			dockerfile := fmt.Sprintf(sshHostDockerfile, core)
			sum := sha256.Sum256([]byte(dockerfile))
			tag := "fencecheck/test-sshhost:" + hex.EncodeToString(sum[:])[:12]
			if ok, err := engine.ImageExists(ctx, cli, tag); err != nil || ok {
				sshImage.tag, sshImage.err = tag, err
				return
			}
			var ctxTar bytes.Buffer
			tw := tar.NewWriter(&ctxTar)
			tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), Typeflag: tar.TypeReg})
			tw.Write([]byte(dockerfile))
			tw.Close()
			start := time.Now()
			resp, err := cli.ImageBuild(ctx, &ctxTar, build.ImageBuildOptions{
				Tags: []string{tag}, Dockerfile: "Dockerfile", Remove: true, ForceRemove: true, Version: build.BuilderV1,
				Labels: map[string]string{engine.LabelFencecheck + ".test-image": "sshhost"},
			})
			if err != nil {
				sshImage.err = err
				return
			}
			defer resp.Body.Close()
			if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, dockertest.LogWriter(t), 0, false, nil); err != nil {
				sshImage.err = fmt.Errorf("building %s: %w", tag, err)
				return
			}
			t.Logf("built %s in %s", tag, time.Since(start).Round(time.Millisecond))
			sshImage.tag = tag
		})
	})
	if sshImage.err != nil {
		t.Fatalf("the test hosts' image: %v", sshImage.err)
	}
	return sshImage.tag
}

// startHosts starts one host container per entry of hosts on a
// network of the test's own, and returns their inventory, parsed from a
// file as a user's would be. Everything is removed when the test ends.
func startHosts(t *testing.T, hosts []testHost) *fixture {
	t.Helper()
	cli := dockertest.Engine(t, engine.Connect)
	img := ensureSSHHostImage(t, cli)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := &fixture{id: dockertest.TestID(), cli: cli, ip: map[string]string{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := engine.DownAll(ctx, cli, f.id); err != nil {
			t.Errorf("removing the test hosts: %v", err)
		}
	})
	labels := map[string]string{engine.LabelFencecheck: "1", engine.LabelTest: f.id}
	netName := "fc-ssh-" + f.id
	if _, err := cli.NetworkCreate(ctx, netName, network.CreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		t.Fatalf("creating %s: %v", netName, err)
	}
	ni, err := cli.NetworkInspect(ctx, netName, network.InspectOptions{})
	if err != nil || len(ni.IPAM.Config) == 0 {
		t.Fatalf("inspecting %s: %v (%d IPAM configs)", netName, err, len(ni.IPAM.Config))
	}
	f.gateway = ni.IPAM.Config[0].Gateway

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
	var names, ids []string
	for _, h := range hosts {
		counts[h.Role]++
		name := map[string]string{"server": "n", "client": "c"}[h.Role] + fmt.Sprint(counts[h.Role])
		if h.Role == "storage" {
			name = "storage"
		}
		cname := "fc-" + f.id + "-ssh-" + name
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
		f.ip[name] = info.NetworkSettings.Networks[netName].IPAddress
		names, ids = append(names, name), append(ids, created.ID)
	}
	// Every container of the image has the host keys made when sshd was
	// installed: read them once, from the first.
	hostKey := readFile(t, cli, ids[0], "/etc/ssh/ssh_host_ed25519_key.pub")
	var known strings.Builder
	for _, n := range names {
		fields := strings.Fields(hostKey)
		fmt.Fprintf(&known, "%s %s %s\n", f.ip[n], fields[0], fields[1])
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
		fmt.Fprintf(&yml, "  - name: %s\n    address: %s:22\n    user: %s\n    role: %s\n    wipe: true\n", names[i], f.ip[names[i]], user, h.Role)
		if h.Freezer != "" {
			fmt.Fprintf(&yml, "    freezer: %s\n", h.Freezer)
		}
	}
	invFile := filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(invFile, []byte(yml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if f.inv, err = Load(invFile); err != nil {
		t.Fatalf("the fixture's inventory:\n%s\n%v", yml.String(), err)
	}
	// sshd listens a moment after the container starts.
	for _, n := range names {
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", f.ip[n]+":22", time.Second)
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
func readFile(t *testing.T, cli *client.Client, id, path string) string {
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
