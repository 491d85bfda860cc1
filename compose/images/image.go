package images

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/internal/buildlock"
)

// The node image is built in two parts, so that a first run waits only
// for what it needs:
//
//   - the core image, fencecheck/node:core-<hash>: Debian's minimal base,
//     the tools every test needs (iptables, iproute2, procps, libfaketime)
//     and the servers compiled on this host (compiledServers: etcd 3.6). An
//     etcd run on the fenced storage needs nothing more.
//   - the node image, fencecheck/node:<hash>: the core and Debian's servers
//     (ZooKeeper on the headless JRE, PostgreSQL, Redis, etcd 3.4, nats-server 2.9), built
//     FROM the core the first time a run needs one of them.
//
// Each tag is a hash of its inputs, so either is rebuilt only when they
// change.

// The core image's build context: the Dockerfile and the files it copies,
// except bin/, the compiled servers.
//
//go:embed node
var nodeContext embed.FS

// The servers' layer's build context.
//
//go:embed servers
var serversContext embed.FS

const (
	// ImageRepository is the repository of the node images; the core's tag
	// is core-<hash of its inputs> (CoreImageTag), the whole node image's
	// the hash of its own (ImageTag).
	ImageRepository = "fencecheck/node"
	// BaseImage is the image the core's Dockerfile starts FROM. fencecheck
	// never pulls it: when it is missing, it is made with debootstrap.
	BaseImage = "debian:bookworm-slim"

	etcd36Binary = "etcd-" + EtcdImageVersion
)

// compiledServer is a server the core image carries in /usr/local/bin,
// compiled on this host (from the Go module proxy) rather than installed
// from Debian. Every one is compiled side by side with the base image's
// debootstrap, each a step of the build. Another compiled server is one
// more entry in compiledServers.
type compiledServer struct {
	// binary is its file name in /usr/local/bin.
	binary string
	// inputs are its sources, part of the core image's tag.
	inputs func() []input
	// compile returns the binary for linux/goarch (from a cache, or
	// compiled now as a step of out).
	compile func(ctx context.Context, goarch string, out *BuildOutput) ([]byte, error)
}

func compiledServers() []compiledServer {
	return []compiledServer{{
		binary: etcd36Binary,
		inputs: func() []input {
			var in []input
			for name, text := range etcdModules[EtcdImageVersion] {
				in = append(in, input{name: etcdModuleDir(EtcdImageVersion) + "/" + name, data: []byte(text)})
			}
			return in
		},
		compile: func(ctx context.Context, goarch string, out *BuildOutput) ([]byte, error) {
			return cachedEtcd(ctx, EtcdImageVersion, goarch, out)
		},
	}}
}

// input is one named input of an image.
type input struct {
	name string
	data []byte
}

// embeddedInputs lists the files of an embedded build context under dir.
func embeddedInputs(fsys embed.FS, dir string) []input {
	var in []input
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fsys.ReadFile(p)
		if err != nil {
			return err
		}
		in = append(in, input{name: p, data: b})
		return nil
	})
	if err != nil {
		panic("compose: reading the embedded build context: " + err.Error())
	}
	return in
}

// coreInputs lists everything the core image is made from: the build
// context under node/ and the compiled servers' sources (etcd36/...).
func coreInputs() []input {
	in := embeddedInputs(nodeContext, "node")
	for _, s := range compiledServers() {
		in = append(in, s.inputs()...)
	}
	return in
}

// imageInputs lists everything the node image is made from: the core
// image's tag and the servers' layer's build context under servers/.
func imageInputs() []input {
	in := embeddedInputs(serversContext, "servers")
	return append(in, input{name: "core", data: []byte(CoreImageTag())})
}

// inputsHash is the first 12 hex digits of a SHA-256 over the inputs in
// name order, each framed by its name and length so that no two different
// sets of inputs hash alike.
func inputsHash(in []input) string {
	sorted := append([]input(nil), in...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	h := sha256.New()
	var n [8]byte
	for _, f := range sorted {
		binary.BigEndian.PutUint64(n[:], uint64(len(f.name)))
		h.Write(n[:])
		h.Write([]byte(f.name))
		binary.BigEndian.PutUint64(n[:], uint64(len(f.data)))
		h.Write(n[:])
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// CoreImageTag is the core image's reference, fencecheck/node:core-<hash>.
// It changes whenever its Dockerfile, a file of its build context or a
// compiled server's sources change; the Debian mirror and package versions
// it was built against are not part of it.
func CoreImageTag() string {
	return ImageRepository + ":core-" + inputsHash(coreInputs())
}

// ImageTag is the node image's reference, fencecheck/node:<hash>: the core
// image and Debian's servers. It changes whenever the core's tag or a file
// of compose/images/servers changes.
func ImageTag() string {
	return ImageRepository + ":" + inputsHash(imageInputs())
}

// EnsureCoreImage returns CoreImageTag at once when the daemon has that
// image, and builds it otherwise: the base image (debootstrap) and the
// compiled servers side by side, then its Dockerfile.
func EnsureCoreImage(ctx context.Context, cli *client.Client, progress io.Writer) (string, error) {
	tag := CoreImageTag()
	exists, err := engine.ImageExists(ctx, cli, tag)
	if err != nil || exists {
		return tag, err
	}
	exists, release, err := lockImage(ctx, nodeImageLock, "the node image "+tag, progress, func() (bool, error) {
		return engine.ImageExists(ctx, cli, tag)
	})
	if err != nil || exists {
		return tag, err
	}
	defer release()
	return buildWithInterrupt(ctx, tag, func() (string, error) {
		return buildCore(ctx, cli, tag, buildOutputOf(progress), true)
	})
}

// EnsureImage returns ImageTag at once when the daemon has that image, and
// builds it otherwise: the core image first if missing, then Debian's
// servers on top.
func EnsureImage(ctx context.Context, cli *client.Client, progress io.Writer) (string, error) {
	tag := ImageTag()
	exists, err := engine.ImageExists(ctx, cli, tag)
	if err != nil || exists {
		return tag, err
	}
	exists, release, err := lockImage(ctx, nodeImageLock, "the node image "+tag, progress, func() (bool, error) {
		return engine.ImageExists(ctx, cli, tag)
	})
	if err != nil || exists {
		return tag, err
	}
	defer release()
	return buildImage(ctx, cli, progress)
}

// BuildImage builds the core image and the node image on it and tags them
// CoreImageTag and ImageTag, reusing the daemon's cached layers where the
// inputs allow: the base image with debootstrap if the daemon lacks it and
// the compiled servers (etcd 3.6, with the host's Go toolchain) side by
// side, then the core's Dockerfile, then Debian's servers (both from the
// host's mirror). Progress goes to progress (may be nil); a *BuildOutput
// prints one line per step.
func BuildImage(ctx context.Context, cli *client.Client, progress io.Writer) (string, error) {
	release, err := buildlock.Acquire(ctx, nodeImageLock, "the node image "+ImageTag(), progress)
	if err != nil {
		return "", err
	}
	defer release()
	return buildImage(ctx, cli, progress)
}

// buildImage is BuildImage, its caller holding the node images' lock.
func buildImage(ctx context.Context, cli *client.Client, progress io.Writer) (string, error) {
	tag := ImageTag()
	return buildWithInterrupt(ctx, tag, func() (string, error) {
		out := buildOutputOf(progress)
		start := time.Now()
		core, err := buildCore(ctx, cli, CoreImageTag(), out, false)
		if err != nil {
			return "", err
		}
		if err := buildServers(ctx, cli, core, tag, out); err != nil {
			return "", err
		}
		out.Linef("built %s in %s (on %s)", tag, formatElapsed(time.Since(start)), core)
		return tag, nil
	})
}

// buildWithInterrupt names an interrupt that cut a step short.
func buildWithInterrupt(ctx context.Context, tag string, build func() (string, error)) (string, error) {
	tagged, err := build()
	if err != nil && ctx.Err() != nil && !strings.Contains(err.Error(), "interrupted") {
		// debootstrap, the import or a compile, cut short.
		err = fmt.Errorf("building %s: interrupted (%w); nothing was tagged", tag, err)
	}
	return tagged, err
}

// buildCore builds the core image: the base image (when the daemon lacks
// it) and the compiled servers side by side, each a step, then the core's
// Dockerfile. alone: it is the whole build, so it says when it is done.
func buildCore(ctx context.Context, cli *client.Client, tag string, out *BuildOutput, alone bool) (string, error) {
	start := time.Now()
	mirrors := HostMirrors()
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return "", engine.DaemonError(cli.DaemonHost(), err)
	}
	haveBase, err := engine.ImageExists(ctx, cli, BaseImage)
	if err != nil {
		return "", err
	}
	out.Linef("building %s (Debian from %s)", tag, mirrors.Archive)

	// The base image (debootstrap, import) and then the core's tools
	// (apt) need nothing of the compiles: on a fresh machine they run side
	// by side, each a step of its own. The first failure cancels the
	// others.
	servers := compiledServers()
	bins := make([][]byte, len(servers))
	errs := make([]error, len(servers)+1)
	var wg sync.WaitGroup
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	archive, security := mirrors.Archive, mirrors.Security
	opts := build.ImageBuildOptions{
		Dockerfile: "Dockerfile",
		PullParent: false,
		BuildArgs: map[string]*string{
			"DEBIAN_MIRROR":          &archive,
			"DEBIAN_SECURITY_MIRROR": &security,
		},
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !haveBase {
			step := out.Begin("base image " + BaseImage + " (debootstrap, import)")
			if err := EnsureBaseImage(bctx, cli, mirrors, step); err != nil {
				cancel()
				errs[len(servers)] = step.Fail(err, ctx.Err() != nil || errors.Is(err, context.Canceled))
				return
			}
			step.Done("")
		}
		// The tools stage alone, untagged: the core's build below finds
		// it in the daemon's cache.
		step := out.Begin("core tools: iptables, iproute2, procps, libfaketime (docker build)")
		fmt.Fprintf(step, "compose: building the tools stage of %s (archive %s, security %q)\n", tag, mirrors.Archive, mirrors.Security)
		body, errc := streamContext(func(w io.Writer) error { return writeCoreContext(w, nil) })
		tools := opts
		tools.Target = "tools"
		if err := dockerBuild(bctx, cli, tag+" (its tools stage)", body, errc, tools, step); err != nil {
			cancel()
			errs[len(servers)] = step.Fail(err, ctx.Err() != nil || errors.Is(err, context.Canceled))
			return
		}
		step.Done("")
	}()
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if bins[i], errs[i] = s.compile(bctx, ver.Arch, out); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first failure is the one to name; the others were cancelled by it.
	var firstErr error
	for _, err := range errs {
		if err != nil && (firstErr == nil || errors.Is(firstErr, context.Canceled) && !errors.Is(err, context.Canceled)) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}

	step := out.Begin("core image (docker build)")
	files := make([]contextFile, 0, len(servers))
	for i, s := range servers {
		files = append(files, contextFile{"bin/" + s.binary, 0o755, bins[i]})
	}
	body, errc := streamContext(func(w io.Writer) error { return writeCoreContext(w, files) })
	opts.Labels = map[string]string{"fencecheck.inputs": strings.TrimPrefix(tag, ImageRepository+":")}
	err = dockerBuild(ctx, cli, tag, body, errc, opts, step)
	if err != nil {
		return "", step.Fail(err, ctx.Err() != nil)
	}
	size, err := imageSize(ctx, cli, tag)
	if err != nil {
		return "", step.Fail(err, false)
	}
	step.Done(size)
	if alone {
		out.Linef("built %s in %s", tag, formatElapsed(time.Since(start)))
	}
	return tag, nil
}

// buildServers builds the node image tag: Debian's servers on the core
// image core.
func buildServers(ctx context.Context, cli *client.Client, core, tag string, out *BuildOutput) error {
	step := out.Begin("Debian's servers (docker build)")
	fmt.Fprintf(step, "compose: building %s on %s\n", tag, core)
	body, errc := streamContext(func(w io.Writer) error { return writeServersContext(w) })
	err := dockerBuild(ctx, cli, tag, body, errc, build.ImageBuildOptions{
		Dockerfile: "Dockerfile",
		PullParent: false,
		BuildArgs:  map[string]*string{"CORE_IMAGE": &core},
		Labels:     map[string]string{"fencecheck.inputs": strings.TrimPrefix(tag, ImageRepository+":")},
	}, step)
	if err != nil {
		return step.Fail(err, ctx.Err() != nil)
	}
	size, err := imageSize(ctx, cli, tag)
	if err != nil {
		return step.Fail(err, false)
	}
	step.Done(size + ": ZooKeeper, PostgreSQL, Redis, etcd 3.4, nats-server 2.9")
	return nil
}

// imageSize says how big a just-built image is ("782 MB").
func imageSize(ctx context.Context, cli *client.Client, tag string) (string, error) {
	inspect, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("building %s: the build ended but the image is missing: %w", tag, err)
	}
	return fmt.Sprintf("%.0f MB", float64(inspect.Size)/1e6), nil
}

// dockerBuild runs one classic-builder build of body (a tar stream; errc
// carries its writer's error) and tags the result tag; a build of one stage
// (opts.Target) is left untagged, for a later build to find in the cache,
// and tag only names it. The daemon removes
// every intermediate container, even of a failed step, and tags only a
// finished build. When ctx ends (an interrupt) it returns at once: closing
// the connection makes the daemon cancel the build, kill and remove the
// step's container and tag nothing.
func dockerBuild(ctx context.Context, cli *client.Client, tag string, body io.ReadCloser, errc <-chan error,
	opts build.ImageBuildOptions, progress io.Writer) error {
	if opts.Target == "" {
		opts.Tags = []string{tag}
	}
	opts.Remove, opts.ForceRemove = true, true
	opts.Version = build.BuilderV1 // BuildKit needs a session; the classic builder is enough
	interrupted := func(err error) error {
		return fmt.Errorf("building %s: interrupted (%w); the daemon cancels the build and tags nothing", tag, err)
	}
	resp, err := cli.ImageBuild(ctx, body, opts)
	if err != nil {
		body.Close()
		if ctx.Err() != nil {
			return interrupted(ctx.Err())
		}
		return fmt.Errorf("building %s: %w", tag, engine.DaemonError(cli.DaemonHost(), err))
	}
	// The response body ends when ctx does.
	streamErr := readMessages(resp.Body, progress)
	resp.Body.Close()
	body.Close()
	if ctx.Err() != nil {
		return interrupted(ctx.Err())
	}
	if err := <-errc; err != nil && streamErr == nil {
		streamErr = fmt.Errorf("sending the build context: %w", err)
	}
	if streamErr != nil {
		return fmt.Errorf("building %s: %w", tag, streamErr)
	}
	return nil
}

// streamContext runs write into a pipe for dockerBuild to read; the
// channel carries write's error once the stream ends.
func streamContext(write func(io.Writer) error) (io.ReadCloser, <-chan error) {
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := write(pw)
		pw.CloseWithError(err)
		errc <- err
	}()
	return pr, errc
}

// writeCoreContext writes the core image's build context: the embedded
// node/ files at its root and the compiled servers (bin/...).
func writeCoreContext(w io.Writer, compiled []contextFile) error {
	return writeContext(w, append(embeddedContext(nodeContext, "node"), compiled...))
}

// writeServersContext writes the servers' layer's build context, the
// embedded servers/ files at its root.
func writeServersContext(w io.Writer) error {
	return writeContext(w, embeddedContext(serversContext, "servers"))
}

// embeddedContext is an embedded directory's files as a build context's,
// at its root.
func embeddedContext(fsys embed.FS, dir string) []contextFile {
	var files []contextFile
	for _, in := range embeddedInputs(fsys, dir) {
		files = append(files, contextFile{strings.TrimPrefix(in.name, dir+"/"), 0o644, in.data})
	}
	return files
}

// readMessages decodes a daemon's JSON message stream (build, import),
// writes its text to progress and returns the first error it reports.
func readMessages(r io.Reader, progress io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var msg jsonmessage.JSONMessage
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading the daemon's messages: %w", err)
		}
		if msg.Error != nil {
			return errors.New(strings.TrimSpace(msg.Error.Message))
		}
		if msg.ErrorMessage != "" { //nolint:staticcheck // older daemons fill only this field
			return errors.New(strings.TrimSpace(msg.ErrorMessage)) //nolint:staticcheck
		}
		switch {
		case msg.Stream != "":
			io.WriteString(progress, msg.Stream)
		case msg.Status != "":
			fmt.Fprintln(progress, msg.Status)
		}
	}
}
