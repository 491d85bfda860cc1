package compose

import (
	"archive/tar"
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

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
)

// The node image's build context: the Dockerfile and the files it copies,
// except etcd-3.6, which BuildImage compiles from etcdModules["3.6"].
//
//go:embed node
var nodeContext embed.FS

const (
	// ImageRepository is the repository of the node image; its tag is the
	// hash of the image's inputs (see ImageTag).
	ImageRepository = "fencecheck/node"
	// BaseImage is the image the Dockerfile starts FROM. fencecheck never
	// pulls it: when it is missing, BuildImage makes it with debootstrap.
	BaseImage = "debian:bookworm-slim"

	etcd36Binary = "etcd-" + EtcdImageVersion
)

// input is one named input of the node image.
type input struct {
	name string
	data []byte
}

// imageInputs lists everything the image is made from: the build context
// under node/ and the etcd 3.6 wrapper's sources under etcd36/.
func imageInputs() []input {
	var in []input
	err := fs.WalkDir(nodeContext, "node", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := nodeContext.ReadFile(p)
		if err != nil {
			return err
		}
		in = append(in, input{name: p, data: b})
		return nil
	})
	if err != nil {
		panic("compose: reading the embedded build context: " + err.Error())
	}
	for name, text := range etcdModules[EtcdImageVersion] {
		in = append(in, input{name: "etcd36/" + name, data: []byte(text)})
	}
	return in
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

// ImageTag is the node image's reference, fencecheck/node:<hash of inputs>.
// It changes whenever the Dockerfile, a file of the build context or the
// etcd 3.6 wrapper changes; the Debian mirror and package versions it was
// built against are not part of it.
func ImageTag() string {
	return ImageRepository + ":" + inputsHash(imageInputs())
}

// EnsureImage returns ImageTag at once when the daemon has that image, and
// builds it with BuildImage otherwise.
func EnsureImage(ctx context.Context, cli *client.Client, progress io.Writer) (string, error) {
	tag := ImageTag()
	exists, err := imageExists(ctx, cli, tag)
	if err != nil {
		return "", err
	}
	if exists {
		return tag, nil
	}
	return BuildImage(ctx, cli, progress)
}

// BuildImage builds the node image and tags it ImageTag, reusing the
// daemon's cached layers where the inputs allow. It first makes the base
// image with debootstrap if the daemon lacks it, then compiles etcd 3.6 with
// the host's Go toolchain, then runs the Dockerfile (which installs Debian's
// servers from the host's mirror). Progress goes to progress (may be nil).
func BuildImage(ctx context.Context, cli *client.Client, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	tag := ImageTag()
	tagged, err := buildImage(ctx, cli, tag, progress)
	if err != nil && ctx.Err() != nil && !strings.Contains(err.Error(), "interrupted") {
		// debootstrap, the import or the etcd compile, cut short.
		err = fmt.Errorf("building %s: interrupted (%w); nothing was tagged", tag, err)
	}
	return tagged, err
}

func buildImage(ctx context.Context, cli *client.Client, tag string, progress io.Writer) (string, error) {
	out := buildOutputOf(progress)
	start := time.Now()
	mirrors := HostMirrors()
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return "", daemonError(cli.DaemonHost(), err)
	}
	haveBase, err := imageExists(ctx, cli, BaseImage)
	if err != nil {
		return "", err
	}
	out.Linef("building %s (Debian from %s)", tag, mirrors.Archive)

	// The base image (debootstrap, import) and the etcd 3.6 compile need
	// nothing of each other: on a fresh machine they run side by side,
	// each a step of its own.
	var (
		etcd             []byte
		baseErr, etcdErr error
		wg               sync.WaitGroup
	)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !haveBase {
		wg.Add(1)
		go func() {
			defer wg.Done()
			step := out.Begin("base image " + BaseImage + " (debootstrap, import)")
			if baseErr = EnsureBaseImage(bctx, cli, mirrors, step); baseErr != nil {
				cancel()
				baseErr = step.Fail(baseErr, ctx.Err() != nil || errors.Is(baseErr, context.Canceled))
				return
			}
			step.Done("")
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if etcd, etcdErr = cachedEtcd(bctx, EtcdImageVersion, ver.Arch, out); etcdErr != nil {
			cancel()
		}
	}()
	wg.Wait()
	// The first failure is the one to name; the other was cancelled by it.
	switch {
	case baseErr != nil && (etcdErr == nil || !errors.Is(baseErr, context.Canceled)):
		return "", baseErr
	case etcdErr != nil:
		return "", etcdErr
	}

	step := out.Begin("Debian packages (docker build)")
	fmt.Fprintf(step, "compose: building %s (archive %s, security %q)\n", tag, mirrors.Archive, mirrors.Security)
	body, errc := buildContext(etcd)
	archive, security := mirrors.Archive, mirrors.Security
	err = dockerBuild(ctx, cli, tag, body, errc, build.ImageBuildOptions{
		Dockerfile: "Dockerfile",
		PullParent: false,
		BuildArgs: map[string]*string{
			"DEBIAN_MIRROR":          &archive,
			"DEBIAN_SECURITY_MIRROR": &security,
		},
		Labels: map[string]string{"fencecheck.inputs": strings.TrimPrefix(tag, ImageRepository+":")},
	}, step)
	if err != nil {
		return "", step.Fail(err, ctx.Err() != nil)
	}
	inspect, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", step.Fail(fmt.Errorf("building %s: the build ended but the image is missing: %w", tag, err), false)
	}
	step.Done(fmt.Sprintf("%.0f MB", float64(inspect.Size)/1e6))
	out.Linef("built %s in %s", tag, formatElapsed(time.Since(start)))
	return tag, nil
}

// dockerBuild runs one classic-builder build of body (a tar stream; errc
// carries its writer's error) and tags the result tag. The daemon removes
// every intermediate container, even of a failed step, and tags only a
// finished build. When ctx ends (an interrupt) it returns at once: closing
// the connection makes the daemon cancel the build, kill and remove the
// step's container and tag nothing.
func dockerBuild(ctx context.Context, cli *client.Client, tag string, body io.ReadCloser, errc <-chan error,
	opts build.ImageBuildOptions, progress io.Writer) error {
	opts.Tags = []string{tag}
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
		return fmt.Errorf("building %s: %w", tag, daemonError(cli.DaemonHost(), err))
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

func imageExists(ctx context.Context, cli *client.Client, ref string) (bool, error) {
	_, err := cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	default:
		return false, daemonError(cli.DaemonHost(), err)
	}
}

// buildContext streams the tar of the build context: the embedded node/
// files at its root and the etcd 3.6 binary. The returned channel carries
// the writer's error once the stream ends.
func buildContext(etcd []byte) (io.ReadCloser, <-chan error) {
	return streamContext(func(w io.Writer) error { return writeBuildContext(w, etcd) })
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

func writeBuildContext(w io.Writer, etcd []byte) error {
	tw := tar.NewWriter(w)
	add := func(name string, mode int64, data []byte) error {
		hdr := &tar.Header{
			Name:     name,
			Mode:     mode,
			Size:     int64(len(data)),
			ModTime:  time.Unix(0, 0),
			Typeflag: tar.TypeReg,
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, in := range imageInputs() {
		if !strings.HasPrefix(in.name, "node/") {
			continue
		}
		if err := add(strings.TrimPrefix(in.name, "node/"), 0o644, in.data); err != nil {
			return err
		}
	}
	if err := add(etcd36Binary, 0o755, etcd); err != nil {
		return err
	}
	return tw.Close()
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
