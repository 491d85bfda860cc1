package images

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/compose/engine"
)

// The server images fencecheck builds locally for --server-image where no
// registry is at hand: each lays a server out as its official image does,
// with the server and nothing else, and no shell. A run against one shows
// that fencecheck needs nothing inside a server's container.

// EtcdImageRepository is the repository of the etcd server images
// fencecheck builds locally for --server-image where no registry is at
// hand: fencecheck/etcd:v3.6.
const EtcdImageRepository = "fencecheck/etcd"

// etcdImageDockerfile lays an etcd binary out as the official etcd image
// does (its binary in /usr/local/bin, its working directory /var/lib/etcd,
// its ports exposed, etcd as the CMD), on nothing at all: the image has no
// shell, no libc and no tools, so a run against it shows that every fault
// is applied from outside the server's container.
const etcdImageDockerfile = `FROM scratch
COPY etcd /usr/local/bin/etcd
WORKDIR /var/etcd/
WORKDIR /var/lib/etcd/
EXPOSE 2379 2380
CMD ["/usr/local/bin/etcd"]
`

// EtcdImageTag is the local etcd server image of version: fencecheck/etcd:v3.6.
func EtcdImageTag(version string) string { return EtcdImageRepository + ":v" + version }

// BuildEtcdImage builds EtcdImageTag(version) from the etcd fencecheck
// compiles from the Go module proxy (EtcdBinary: the cache, or a compile
// now), for the engine's architecture. It needs no registry and no base
// image.
func BuildEtcdImage(ctx context.Context, cli *client.Client, version string, progress io.Writer) (string, error) {
	out := buildOutputOf(progress)
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return "", engine.DaemonError(cli.DaemonHost(), err)
	}
	bin, err := EtcdBinary(ctx, version, ver.Arch, out)
	if err != nil {
		return "", err
	}
	tag := EtcdImageTag(version)
	step := out.Begin("server image " + tag + " (docker build)")
	pr, errc := streamContext(func(w io.Writer) error { return writeEtcdImageContext(w, bin) })
	if err := dockerBuild(ctx, cli, tag, pr, errc, build.ImageBuildOptions{Dockerfile: "Dockerfile",
		Labels: map[string]string{"fencecheck.server-image": "etcd " + version}}, step); err != nil {
		return "", step.Fail(err, ctx.Err() != nil)
	}
	step.Done("etcd " + version + " alone, in the official image's layout, no shell")
	return tag, nil
}

func writeEtcdImageContext(w io.Writer, etcd []byte) error {
	return writeContext(w, []contextFile{{"Dockerfile", 0o644, []byte(etcdImageDockerfile)}, {"etcd", 0o755, etcd}})
}

// contextFile is one file of a small build context.
type contextFile struct {
	name string
	mode int64
	data []byte
}

func writeContext(w io.Writer, files []contextFile) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0),
			Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// RedisImageTag is the local Redis server image, from the node image's
// Debian package: fencecheck/redis:bookworm.
const RedisImageTag = "fencecheck/redis:bookworm"

// redisImageDockerfile copies Debian's redis-server and the shared
// libraries it loads (as ldd lists them, the loader included) out of the
// node image onto nothing, laid out as the official redis image is
// (redis-server on PATH, working directory /data, port 6379): no shell,
// no redis-cli, not even the official image's entrypoint script, which a
// run never needs (it passes redis-server and its arguments as the
// command).
const redisImageDockerfile = `FROM %s AS server
RUN mkdir -p /out/usr/bin && cp -L /usr/bin/redis-server /out/usr/bin/redis-server \
 && for lib in $(ldd /usr/bin/redis-server | grep -o '/[^ ]*'); do cp -L --parents "$lib" /out/; done
FROM scratch
COPY --from=server /out/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /data
EXPOSE 6379
CMD ["redis-server"]
`

// BuildRedisImage builds RedisImageTag from the node image (built first
// if missing). It needs no registry.
func BuildRedisImage(ctx context.Context, cli *client.Client, progress io.Writer) (string, error) {
	out := buildOutputOf(progress)
	node, err := EnsureImage(ctx, cli, out)
	if err != nil {
		return "", err
	}
	step := out.Begin("server image " + RedisImageTag + " (docker build)")
	dockerfile := []byte(fmt.Sprintf(redisImageDockerfile, node))
	pr, errc := streamContext(func(w io.Writer) error { return writeContext(w, []contextFile{{"Dockerfile", 0o644, dockerfile}}) })
	if err := dockerBuild(ctx, cli, RedisImageTag, pr, errc, build.ImageBuildOptions{Dockerfile: "Dockerfile",
		Labels: map[string]string{"fencecheck.server-image": "redis"}}, step); err != nil {
		return "", step.Fail(err, ctx.Err() != nil)
	}
	step.Done("Debian's redis-server and its libraries alone, in the official image's layout, no shell")
	return RedisImageTag, nil
}
