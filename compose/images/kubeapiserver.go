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
	"strings"
	"sync"
	"time"
)

//go:generate go test -run TestKubeAPIServerModuleMatchesDirectory -update .

// KubeAPIServerVersion is the Kubernetes release whose API server
// fencecheck compiles from the Go module proxy (compose/images/kubeapiserver):
// the wrapper module requires k8s.io/kubernetes at this version and
// replaces each staging module (k8s.io/api, k8s.io/apiserver, …) with its
// published v0.x twin. The binary is stamped with it, so the server's
// /version tells the truth.
const KubeAPIServerVersion = "v1.34.4"

// KubeAPIServerBinaryName is the compiled API server's file name in the
// nodes.
const KubeAPIServerBinaryName = "kube-apiserver"

// kubeAPIServerPkg is the package the wrapper module builds: the
// upstream command itself, named by the module's tool directive so that
// `go mod tidy` keeps its requirements.
const kubeAPIServerPkg = "k8s.io/kubernetes/cmd/kube-apiserver"

// kubeAPIServerLdFlags stamps the version the way Kubernetes' own
// release builds do (k8s.io/component-base/version), so that /version
// reports KubeAPIServerVersion rather than v0.0.0-master.
func kubeAPIServerLdFlags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubeAPIServerVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	pkg := "k8s.io/component-base/version"
	return strings.Join([]string{"-s", "-w",
		"-X", pkg + ".gitVersion=" + KubeAPIServerVersion,
		"-X", pkg + ".gitMajor=" + major,
		"-X", pkg + ".gitMinor=" + minor,
		"-X", pkg + ".gitTreeState=clean",
	}, " ")
}

var kubeAPIServerBuilt struct {
	sync.Mutex
	bins map[string][]byte
}

// KubeAPIServerBinary returns the kube-apiserver binary for linux/goarch:
// from this process, from the user's cache (os.UserCacheDir()/fencecheck,
// named by the hash of the wrapper module and the version stamp), or
// compiled there now with the host's Go toolchain (a few minutes and
// ~250 MB of module downloads the first time). Progress goes to
// progress, the compile as a step with its time.
func KubeAPIServerBinary(ctx context.Context, goarch string, progress io.Writer) ([]byte, error) {
	out := buildOutputOf(progress)
	kubeAPIServerBuilt.Lock()
	defer kubeAPIServerBuilt.Unlock()
	arch := archOrAmd64(goarch)
	if b := kubeAPIServerBuilt.bins[arch]; b != nil {
		return b, nil
	}
	path := kubeAPIServerCachePath(goarch)
	// A step like etcd's compile: a line with its time, a live line on a
	// terminal, the go tool's output in the build log. The first compile
	// takes minutes, and a run that printed nothing meanwhile looked hung.
	b, err := compileOnce(ctx, out, serverCompile{Name: "kube-apiserver " + KubeAPIServerVersion, Arch: arch, Path: path,
		Step:  fmt.Sprintf("kube-apiserver %s compile (go build, once: kept in the cache)", KubeAPIServerVersion),
		Build: func(progress io.Writer) ([]byte, error) { return buildKubeAPIServer(ctx, goarch, progress) }})
	if err != nil {
		return nil, err
	}
	return kubeAPIServerKeep(arch, b), nil
}

func kubeAPIServerKeep(arch string, b []byte) []byte {
	if kubeAPIServerBuilt.bins == nil {
		kubeAPIServerBuilt.bins = map[string][]byte{}
	}
	kubeAPIServerBuilt.bins[arch] = b
	return b
}

// kubeAPIServerCachePath is where the binary for goarch is kept, or ""
// when the user has no cache directory.
func kubeAPIServerCachePath(goarch string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	h := sha256.New()
	for _, name := range kubeAPIServerModuleNames {
		text := kubeAPIServerModule[name]
		fmt.Fprintf(h, "%s\x00%d\x00%s", name, len(text), text)
	}
	fmt.Fprintf(h, "ldflags\x00%s", kubeAPIServerLdFlags())
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	return filepath.Join(dir, "fencecheck", fmt.Sprintf("%s-%s-%s-linux-%s", KubeAPIServerBinaryName, KubeAPIServerVersion, sum, archOrAmd64(goarch)))
}

// buildKubeAPIServer compiles the wrapper module with the host's Go
// toolchain, as a static binary for linux/goarch.
func buildKubeAPIServer(ctx context.Context, goarch string, progress io.Writer) ([]byte, error) {
	dir, err := os.MkdirTemp("", "fencecheck-kubeapiserver-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, name := range kubeAPIServerModuleNames {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(kubeAPIServerModule[name]), 0o644); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(progress, "compose: compiling kube-apiserver %s (linux/%s, CGO_ENABLED=0; a few minutes, once: it is kept in the cache)\n",
		KubeAPIServerVersion, archOrAmd64(goarch))
	start := time.Now()
	b, err := staticGoBuild(ctx, staticBuild{Dir: dir, Pkg: kubeAPIServerPkg, Name: KubeAPIServerBinaryName, GoArch: goarch,
		LdFlags: kubeAPIServerLdFlags(), GoFlags: "-mod=readonly -buildvcs=false", Env: []string{"GOWORK=off"}, Trimpath: true}, progress)
	var noGo *noToolchainError
	switch {
	case errors.As(err, &noGo):
		return nil, errors.New("building kube-apiserver needs the Go toolchain, and `go` is not on PATH")
	case err != nil:
		return nil, fmt.Errorf("compiling kube-apiserver %s (go build in a copy of compose/images/kubeapiserver): %w", KubeAPIServerVersion, err)
	}
	fmt.Fprintf(progress, "compose: compiled kube-apiserver %s in %s (%.0f MB)\n", KubeAPIServerVersion, time.Since(start).Round(time.Second), float64(len(b))/1e6)
	return b, nil
}
