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
	"sync"
)

// ModuleServer is a lock service's server that a backend compiles from
// the Go module proxy on first use, as etcd 3.5 and 3.7 are: a wrapper
// module (go.mod and go.sum pinning one release, the backend's own files)
// built with the host's Go toolchain into a static binary, kept in the
// user's cache (os.UserCacheDir()/fencecheck) and copied into the server
// nodes. It names no backend: the backend that owns the module describes
// it, so a new server compiled this way is a file of its package, not of
// this one.
type ModuleServer struct {
	// Name is the binary's file name in the nodes and the cache
	// ("nats-server").
	Name string
	// Version is the release the wrapper module requires, for messages
	// and the cache's file name ("2.15.3").
	Version string
	// Module holds the wrapper module's files by name (go.mod, go.sum and
	// any source of its own); their hash names the cached binary, so a
	// new release never finds an old one.
	Module map[string]string
	// Pkg is the package `go build` compiles: "." for a main of the
	// module's own, or an import path the go.mod names with a tool
	// directive.
	Pkg string
	// LdFlags are the linker's flags ("" is "-s -w").
	LdFlags string
}

// moduleBuilt keeps what ModuleServer.Binary handed out in this process,
// so a matrix of runs reads each binary once and never compiles one twice
// side by side.
var moduleBuilt struct {
	sync.Mutex
	bins map[string][]byte
}

// Binary returns the server for linux/goarch: from this process, from the
// user's cache, or compiled there now as a visible, timed step of progress
// (a minute or more the first time, once per machine).
func (m ModuleServer) Binary(ctx context.Context, goarch string, progress io.Writer) ([]byte, error) {
	if m.Name == "" || len(m.Module) == 0 || m.Pkg == "" {
		return nil, errors.New("images: a module server needs a name, its wrapper module and a package")
	}
	if progress == nil {
		progress = io.Discard
	}
	moduleBuilt.Lock()
	defer moduleBuilt.Unlock()
	name := m.cacheName(goarch)
	if b := moduleBuilt.bins[name]; b != nil {
		return b, nil
	}
	out := buildOutputOf(progress)
	path := ""
	if dir, err := os.UserCacheDir(); err == nil {
		path = filepath.Join(dir, "fencecheck", name)
	}
	b, err := compileOnce(ctx, out, serverCompile{Name: m.Name + " " + m.Version, Arch: archOrAmd64(goarch), Path: path,
		Step:  fmt.Sprintf("%s %s compile (go build)", m.Name, m.Version),
		Build: func(progress io.Writer) ([]byte, error) { return m.build(ctx, goarch, progress) }})
	if err != nil {
		return nil, err
	}
	return m.keep(name, b), nil
}

func (m ModuleServer) keep(name string, b []byte) []byte {
	if moduleBuilt.bins == nil {
		moduleBuilt.bins = map[string][]byte{}
	}
	moduleBuilt.bins[name] = b
	return b
}

// cacheName is the binary's file name in the cache: its name, release,
// the hash of the wrapper module and the flags, and the platform.
func (m ModuleServer) cacheName(goarch string) string {
	names := make([]string, 0, len(m.Module))
	for name := range m.Module {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00%s", name, len(m.Module[name]), m.Module[name])
	}
	fmt.Fprintf(h, "pkg\x00%s\x00ldflags\x00%s", m.Pkg, m.ldFlags())
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	return fmt.Sprintf("%s-%s-%s-linux-%s", m.Name, m.Version, sum, archOrAmd64(goarch))
}

func (m ModuleServer) ldFlags() string {
	if m.LdFlags == "" {
		return "-s -w"
	}
	return m.LdFlags
}

// build compiles the wrapper module in a temporary copy, as a static
// binary for linux/goarch.
func (m ModuleServer) build(ctx context.Context, goarch string, progress io.Writer) ([]byte, error) {
	dir, err := os.MkdirTemp("", "fencecheck-"+m.Name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for name, text := range m.Module {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(progress, "compose: compiling %s %s (linux/%s, CGO_ENABLED=0; once: it is kept in the cache)\n", m.Name, m.Version, archOrAmd64(goarch))
	b, err := staticGoBuild(ctx, staticBuild{Dir: dir, Pkg: m.Pkg, Name: m.Name, GoArch: goarch,
		LdFlags: m.ldFlags(), GoFlags: "-mod=readonly -buildvcs=false", Env: []string{"GOWORK=off"}, Trimpath: true}, progress)
	var noGo *noToolchainError
	switch {
	case errors.As(err, &noGo):
		return nil, fmt.Errorf("building %s %s needs the Go toolchain, and `go` is not on PATH", m.Name, m.Version)
	case err != nil:
		return nil, fmt.Errorf("compiling %s %s (go build of its wrapper module): %w", m.Name, m.Version, err)
	}
	return b, nil
}
