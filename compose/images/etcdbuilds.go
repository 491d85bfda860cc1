package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

//go:generate go test -run TestEtcdModulesMatchDirectories -update .

// etcdModuleNames are the files of each etcd wrapper module, copied into
// etcdmodules_files.go by go generate.
var etcdModuleNames = []string{"go.mod", "go.sum", "main.go"}

// EtcdImageVersion is the etcd build the node image carries as
// /usr/local/bin/etcd-3.6; the other module versions are compiled only
// when a run asks for them (EtcdBinary) and copied into the server nodes.
const EtcdImageVersion = "3.6"

// etcdModuleVersions are the etcd releases fencecheck builds from the Go
// module proxy, oldest first: one wrapper module each (compose/images/etcd35,
// etcd36, etcd37), embedded by go generate as etcdModules.
var etcdModuleVersions = []string{"3.5", "3.6", "3.7"}

// EtcdModuleVersions are the etcd releases fencecheck builds from the Go
// module proxy, oldest first.
func EtcdModuleVersions() []string { return append([]string(nil), etcdModuleVersions...) }

// EtcdBinaryName is the file name of a compiled etcd: etcd-3.5.
func EtcdBinaryName(version string) string { return "etcd-" + version }

func etcdModuleDir(version string) string { return "etcd" + strings.ReplaceAll(version, ".", "") }

// etcdBuilt keeps what EtcdBinary handed out in this process, so a matrix
// over versions reads each binary once and two runs never compile the
// same one side by side.
var etcdBuilt struct {
	sync.Mutex
	bins map[string][]byte
}

// EtcdBinary returns the etcd binary of version (a key of
// EtcdModuleVersions, or an exact release such as 3.5.4: EtcdRelease) for
// linux/goarch: from this process, from the user's cache, or compiled
// there now with the host's Go toolchain (a minute or two the first
// time). Progress goes to progress.
func EtcdBinary(ctx context.Context, version, goarch string, progress io.Writer) ([]byte, error) {
	if IsEtcdRelease(version) {
		r, err := EtcdRelease(version)
		if err != nil {
			return nil, err
		}
		return r.Binary(ctx, goarch, progress)
	}
	if _, ok := etcdModules[version]; !ok {
		return nil, fmt.Errorf("no etcd wrapper module for version %q (accepted: %s, or %s)", version, strings.Join(EtcdModuleVersions(), ", "), EtcdReleasesAccepted)
	}
	if progress == nil {
		progress = io.Discard
	}
	etcdBuilt.Lock()
	defer etcdBuilt.Unlock()
	key := version + "/" + archOrAmd64(goarch)
	if b := etcdBuilt.bins[key]; b != nil {
		return b, nil
	}
	b, err := cachedEtcd(ctx, version, goarch, progress)
	if err != nil {
		return nil, err
	}
	if etcdBuilt.bins == nil {
		etcdBuilt.bins = map[string][]byte{}
	}
	etcdBuilt.bins[key] = b
	return b, nil
}

// cachedEtcd returns the etcd binary of version for goarch from the
// user's cache (os.UserCacheDir()/fencecheck), compiling it there the
// first time. The cache is fencecheck's own, not Go's: `go clean -cache`
// leaves it, so a rebuilt image (a new Dockerfile, a new Debian point
// release) does not pay the compile again. Its name carries the hash of
// the wrapper module's files, so a new etcd release never finds an old
// binary.
func cachedEtcd(ctx context.Context, version, goarch string, progress io.Writer) ([]byte, error) {
	out := buildOutputOf(progress)
	path := etcdCachePath(version, goarch)
	return compileOnce(ctx, out, serverCompile{Name: "etcd " + version, Arch: archOrAmd64(goarch), Path: path,
		Step:  fmt.Sprintf("etcd %s compile (go build)", version),
		Build: func(progress io.Writer) ([]byte, error) { return buildEtcd(ctx, version, goarch, progress) }})
}

// etcdCachePath is where the binary of version for goarch is kept, or ""
// when the user has no cache directory.
func etcdCachePath(version, goarch string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	files := etcdModules[version]
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00%s", name, len(files[name]), files[name])
	}
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	return filepath.Join(dir, "fencecheck", fmt.Sprintf("%s-%s-linux-%s", EtcdBinaryName(version), sum, archOrAmd64(goarch)))
}

// buildEtcd compiles the wrapper module of version with the host's Go
// toolchain, as a static binary for linux/goarch.
func buildEtcd(ctx context.Context, version, goarch string, progress io.Writer) ([]byte, error) {
	dir, err := os.MkdirTemp("", "fencecheck-"+etcdModuleDir(version)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for name, text := range etcdModules[version] {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(progress, "compose: compiling etcd %s (linux/%s, CGO_ENABLED=0)\n", version, archOrAmd64(goarch))
	start := time.Now()
	b, err := staticGoBuild(ctx, staticBuild{Dir: dir, Pkg: ".", Name: EtcdBinaryName(version), GoArch: goarch,
		LdFlags: "-s -w", GoFlags: "-mod=readonly -buildvcs=false", Env: []string{"GOWORK=off"}, Trimpath: true}, progress)
	var noGo *noToolchainError
	switch {
	case errors.As(err, &noGo):
		return nil, fmt.Errorf("building etcd %s needs the Go toolchain, and `go` is not on PATH", version)
	case err != nil:
		return nil, fmt.Errorf("compiling etcd %s (go build in a copy of compose/%s): %w", version, etcdModuleDir(version), err)
	}
	fmt.Fprintf(progress, "compose: compiled etcd %s in %s (%.0f MB)\n", version, time.Since(start).Round(time.Second), float64(len(b))/1e6)
	return b, nil
}

// writeAtomically writes b to path through a temporary file beside it, so
// a reader never sees half a binary.
func writeAtomically(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// keepCompiled writes a compiled binary b to the cache at path (none when
// path is "") and returns its build step's detail: its size, and where it
// was kept or why not. A cache that cannot be written costs the next run
// a compile, nothing more, so that is no error.
func keepCompiled(path string, b []byte) (detail string, kept bool) {
	detail = fmt.Sprintf("%.0f MB", float64(len(b))/1e6)
	if path == "" {
		return detail, false
	}
	if err := writeAtomically(path, b); err != nil {
		return detail + fmt.Sprintf(", not kept (%v)", err), false
	}
	return detail + ", kept in " + filepath.Dir(path), true
}
