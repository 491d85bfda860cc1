package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/clientdir"
	"github.com/fencecheck/fencecheck/compose/engine"
)

// ClientImageRepository prefixes a user client's image:
// fencecheck/client-<name>:<hash of inputs>.
const ClientImageRepository = "fencecheck/client-"

// ClientImageTag is the tag of c's image on nodeImageID: a hash of the
// node image's id, the manifest, every file of the directory and the
// go_build binary (nil without one: it also depends on code outside the
// directory, such as package lockclient).
func ClientImageTag(nodeImageID string, c *clientdir.Client, goBinary []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", nodeImageID, c.Hash())
	h.Write(goBinary)
	return ClientImageRepository + c.Manifest.Name + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}

// EnsureClientImage returns the image of the client directory c, derived
// from nodeImage: the manifest's Debian packages installed, the directory
// copied to /client (with the go_build binary, compiled here), and its
// build commands run there. It is built once per set of inputs, through
// the daemon's API; progress shows the build.
func EnsureClientImage(ctx context.Context, cli *client.Client, nodeImage string, c *clientdir.Client, progress io.Writer) (string, error) {
	out := buildOutputOf(progress)
	node, err := cli.ImageInspect(ctx, nodeImage)
	if err != nil {
		return "", fmt.Errorf("the node image %s: %w", nodeImage, engine.DaemonError(cli.DaemonHost(), err))
	}
	start := time.Now()
	files := append([]clientdir.File(nil), c.Files...)
	var bin []byte
	if c.Manifest.GoBuild != "" {
		// Compiled every time (Go's build cache makes that quick): the
		// binary is part of the tag.
		ver, err := cli.ServerVersion(ctx)
		if err != nil {
			return "", engine.DaemonError(cli.DaemonHost(), err)
		}
		step := out.Begin("client " + c.Manifest.Name + " compile (go build)")
		bin, err = goBuild(ctx, c, ver.Arch, step)
		if err != nil {
			return "", step.Fail(err, ctx.Err() != nil)
		}
		step.Done("")
		files = append(files, clientdir.File{Name: c.Manifest.Name, Mode: 0o755, Data: bin})
	}
	tag := ClientImageTag(node.ID, c, bin)
	if ok, err := engine.ImageExists(ctx, cli, tag); err != nil || ok {
		return tag, err
	}
	ok, release, err := lockImage(ctx, tag, "the image of client "+c.Manifest.Name, out, func() (bool, error) {
		return engine.ImageExists(ctx, cli, tag)
	})
	if err != nil || ok {
		return tag, err
	}
	defer release()
	step := out.Begin("client image " + c.Manifest.Name + " (docker build)")
	fmt.Fprintf(step, "compose: building client image %s from %s (%s)\n", tag, nodeImage, c.Dir)
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := writeClientContext(pw, nodeImage, c.Manifest, files)
		pw.CloseWithError(err)
		errc <- err
	}()
	err = dockerBuild(ctx, cli, tag, pr, errc, build.ImageBuildOptions{
		Dockerfile: "Dockerfile",
		Labels: map[string]string{
			"fencecheck.client":      c.Manifest.Name,
			"fencecheck.client.hash": c.Hash(),
		},
	}, step)
	if err != nil {
		return "", step.Fail(fmt.Errorf("client %s (%s): %w", c.Manifest.Name, c.Dir, err), ctx.Err() != nil)
	}
	step.Done(tag)
	fmt.Fprintf(out, "compose: built %s in %s\n", tag, time.Since(start).Round(time.Second))
	return tag, nil
}

// ClientDockerfile is the Dockerfile of a client image on nodeImage.
func ClientDockerfile(nodeImage string, m clientdir.Manifest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\n", nodeImage)
	if len(m.Packages) > 0 {
		// policy-rc.d keeps the packages' postinst scripts from starting
		// daemons during the build, as in the node image.
		fmt.Fprintf(&b, "RUN set -eux; printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d; chmod 0755 /usr/sbin/policy-rc.d; "+
			"mkdir -p /usr/share/man/man1; apt-get update; DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends %s; "+
			"rm -f /usr/sbin/policy-rc.d; apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin\n",
			strings.Join(m.Packages, " "))
	}
	b.WriteString("COPY client/ /client/\nWORKDIR /client\n")
	for _, cmd := range m.Build {
		q, _ := json.Marshal([]string{"sh", "-ec", cmd})
		fmt.Fprintf(&b, "RUN %s\n", q)
	}
	b.WriteString("WORKDIR /\n")
	return b.String()
}

func writeClientContext(w io.Writer, nodeImage string, m clientdir.Manifest, files []clientdir.File) error {
	tw := tar.NewWriter(w)
	add := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0),
			Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("Dockerfile", 0o644, []byte(ClientDockerfile(nodeImage, m))); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "client/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
		return err
	}
	for _, f := range files {
		if err := add("client/"+f.Name, int64(f.Mode.Perm()|0o444), f.Data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// goBuild compiles the client's go_build package with the host's Go
// toolchain, static, for the containers.
func goBuild(ctx context.Context, c *clientdir.Client, goarch string, progress io.Writer) ([]byte, error) {
	pkg := "./" + strings.TrimPrefix(filepath.ToSlash(c.Manifest.GoBuild), "./")
	fmt.Fprintf(progress, "compose: compiling client %s (go build %s in %s, linux/%s, CGO_ENABLED=0)\n", c.Manifest.Name, pkg, c.Dir, archOrAmd64(goarch))
	b, err := staticGoBuild(ctx, staticBuild{Dir: c.Dir, Pkg: pkg, Name: c.Manifest.Name, GoArch: goarch,
		GoFlags: "-buildvcs=false"}, progress)
	var noGo *noToolchainError
	switch {
	case errors.As(err, &noGo):
		return nil, fmt.Errorf("client %s: go_build needs the Go toolchain, and `go` is not on PATH", c.Manifest.Name)
	case err != nil:
		return nil, fmt.Errorf("client %s: go build %s in %s: %w", c.Manifest.Name, pkg, c.Dir, err)
	}
	return b, nil
}

// staticBuild is one static Go build for the containers: package Pkg in
// Dir, for linux/GoArch (amd64 when empty), with CGO_ENABLED=0.
type staticBuild struct {
	Dir, Pkg, Name, GoArch string
	// Trimpath builds with -trimpath: the servers built in a wrapper
	// module of their own (etcd, kube-apiserver, nats-server), whose
	// binaries then record no temporary directory. The agent programs and
	// a client's go_build go without it: Go's build cache keys a package
	// compiled with -trimpath apart from the same package without, and
	// they share most of their packages (client-go for the kubernetes
	// ones) with the check binary and the tests, which are built without
	// it, so -trimpath made a fresh machine compile client-go twice.
	Trimpath bool
	// LdFlags and GoFlags are passed on as -ldflags and GOFLAGS; Env is
	// added to the environment.
	LdFlags, GoFlags string
	Env              []string
}

// noToolchainError: `go` is not on PATH.
type noToolchainError struct{}

func (*noToolchainError) Error() string { return "the Go toolchain is not on PATH" }

func archOrAmd64(goarch string) string {
	if goarch == "" {
		return "amd64"
	}
	return goarch
}

// staticGoBuild runs b with the host's Go toolchain and returns the
// binary. Its output goes to progress; a failed build's error carries
// what it wrote to stderr.
func staticGoBuild(ctx context.Context, b staticBuild, progress io.Writer) ([]byte, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, &noToolchainError{}
	}
	tmp, err := os.MkdirTemp("", "fencecheck-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, b.Name)
	args := []string{"build"}
	if b.Trimpath {
		args = append(args, "-trimpath")
	}
	if b.LdFlags != "" {
		args = append(args, "-ldflags="+b.LdFlags)
	}
	cmd := exec.CommandContext(ctx, gobin, append(args, "-o", out, b.Pkg)...)
	cmd.Dir = b.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+archOrAmd64(b.GoArch), "GOFLAGS="+b.GoFlags)
	cmd.Env = append(cmd.Env, b.Env...)
	var stderr strings.Builder
	cmd.Stdout = progress
	cmd.Stderr = io.MultiWriter(progress, &stderr)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, strings.TrimSpace(stderr.String()))
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return nil, errors.New("go build left no binary")
	}
	return bin, nil
}
