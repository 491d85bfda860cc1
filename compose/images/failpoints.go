package images

// etcd's failpoint build: the same etcd release as its plain build, with
// gofail's failpoints switched on, compiled only when a run arms a
// failpoint (the failpoint fault) and kept in the user's cache apart from
// the plain binary.
//
// etcd marks a failpoint as a comment in its source (`// gofail: var
// raftBeforeSave struct{}`); `gofail enable DIR...` rewrites the marked
// packages so each becomes a call into go.etcd.io/gofail/runtime, which
// the build then needs; at run time GOFAIL_HTTP=host:port serves an
// endpoint to arm them (PUT /NAME with `panic`, `sleep(100)`, …). etcd's
// own failpoint build does exactly this over its source tree (build.sh's
// toggle_failpoints behind `make gofail-enable`, and tests/robustness's
// Makefile), then `go get go.etcd.io/gofail@<version>` in each module.
//
// Here the source is not a checkout but the release's module in Go's
// module cache, which is read-only and shared: it must never be rewritten
// in place. So the build works on copies in a temporary directory:
//
//	tmp/server   a copy of go.etcd.io/etcd/server/v3@<release> from the
//	             module cache, made writable; gofail enable runs over the
//	             packages etcd's lists name, and its go.mod gets the
//	             gofail requirement (go mod edit: the copy is not the main
//	             module, so its own replace directives never apply);
//	tmp/wrapper  the plain build's wrapper module (etcd35, …), with a
//	             replace of go.etcd.io/etcd/server/v3 by ../server and
//	             `go get go.etcd.io/gofail@v0.2.0`, which adds gofail's
//	             requirement and its two go.sum lines and changes nothing
//	             else;
//
// then the same static `go build -mod=readonly` as the plain binary.
// Nothing new is embedded per release: the wrapper module is the plain
// build's, and the rest comes from the module proxy at build time.
//
// Which failpoints a release has is read from the same source without a
// compile (EtcdFailpoints), so a run can refuse an unknown name before
// anything is created.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// GofailModule is gofail at the version the failpoint build uses: the one
// etcd's own tools pin for its 3.5 to 3.7 lines.
const (
	GofailModule  = "go.etcd.io/gofail"
	GofailVersion = "v0.2.0"
)

// etcdFailpointPackages are the server module's packages etcd's failpoint
// builds run gofail over, by their directory in the module: build.sh's
// toggle_failpoints of the 3.5 line (etcdserver, lease, lease/leasehttp,
// mvcc, wal, mvcc/backend) and tests/robustness's Makefile of 3.6 and 3.7
// (the storage/ layout, v3rpc, membership, rafthttp). A release has the
// ones its layout has; the others are skipped.
var etcdFailpointPackages = []string{
	"etcdserver",
	"etcdserver/api/membership",
	"etcdserver/api/rafthttp",
	"etcdserver/api/v3rpc",
	"lease",
	"lease/leasehttp",
	"mvcc",
	"mvcc/backend",
	"storage/backend",
	"storage/mvcc",
	"storage/wal",
	"wal",
}

// Failpoint is one failpoint in a release's source.
type Failpoint struct {
	// Name is what gofail's endpoint arms: PUT /Name.
	Name string
	// Type is the value the failpoint takes (struct{} takes none: panic,
	// sleep and the like; string or bool are returned into the code).
	Type string
	// Package is its directory in the server module ("etcdserver").
	Package string
}

// EtcdFailpointBinaryName is the file name of version's failpoint build in
// the nodes: etcd-3.5-failpoints.
func EtcdFailpointBinaryName(version string) string { return EtcdBinaryName(version) + "-failpoints" }

// EtcdFailpointVersions are the series builds with a failpoint build:
// those compiled from the Go module proxy (a wrapper module), whose
// source is there to rewrite. Every exact release (EtcdRelease) has one
// too.
func EtcdFailpointVersions() []string {
	var out []string
	for _, v := range EtcdModuleVersions() {
		if _, err := etcdFailpointModule(v); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// HasEtcdFailpointBuild says why version has no failpoint build, or nil:
// a series build compiled from the proxy and every exact release from
// 3.5.0 on have one.
func HasEtcdFailpointBuild(version string) error {
	_, err := etcdFailpointModule(version)
	return err
}

// failpointModule is what the failpoint build of a release starts from:
// the wrapper module the plain build compiles, and the server module's
// version in it.
type failpointModule struct {
	// files are the wrapper module's files: a series build's embedded
	// module, or an exact release's generated go.mod and main.go
	// (Release), which `go mod tidy` completes as the plain build does.
	files  map[string]string
	server string // "v3.5.36"
	tidy   bool
}

// etcdFailpointModule is version's wrapper module and server release; an
// error names the builds that have one.
func etcdFailpointModule(version string) (failpointModule, error) {
	if IsEtcdRelease(version) {
		r, err := EtcdRelease(version)
		if err != nil {
			return failpointModule{}, err
		}
		return failpointModule{files: map[string]string{"go.mod": r.goMod(), "main.go": r.Main}, server: "v" + r.Version, tidy: true}, nil
	}
	files, ok := etcdModules[version]
	if !ok {
		return failpointModule{}, fmt.Errorf("no etcd build %q to rebuild with failpoints (accepted: %s, or %s)", version, strings.Join(EtcdModuleVersions(), ", "), EtcdReleasesAccepted)
	}
	mv, err := serverModuleVersion(files["go.mod"])
	if err != nil {
		return failpointModule{}, fmt.Errorf("etcd %s: %w", version, err)
	}
	return failpointModule{files: files, server: mv}, nil
}

// serverModuleVersion is the server module's version a wrapper's go.mod
// requires ("v3.5.36").
func serverModuleVersion(gomod string) (string, error) {
	m := requireServer.FindStringSubmatch(gomod)
	if m == nil {
		return "", fmt.Errorf("the wrapper module requires no %s", etcdServerModule)
	}
	return m[1], nil
}

var requireServer = regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(etcdServerModule) + `\s+(v[0-9][^\s]*)`)

// failpointSources keeps what EtcdFailpoints read in this process, by
// version.
var failpointSources struct {
	sync.Mutex
	byVersion map[string]failpointSource
}

// failpointSource is what a release's source says of its failpoints.
type failpointSource struct {
	dir        string // the server module in Go's module cache
	packages   []string
	failpoints []Failpoint
}

// EtcdFailpoints lists the failpoints version's failpoint build has, by
// name, read from the release's source in Go's module cache (downloaded
// from the module proxy the first time): the `// gofail: var NAME TYPE`
// markers of the packages the build enables. It compiles nothing. An
// error says why the release has no failpoint build, or why its source
// could not be read.
func EtcdFailpoints(ctx context.Context, version string) ([]Failpoint, error) {
	src, err := etcdFailpointSource(ctx, version)
	if err != nil {
		return nil, err
	}
	return slices.Clone(src.failpoints), nil
}

func etcdFailpointSource(ctx context.Context, version string) (failpointSource, error) {
	failpointSources.Lock()
	defer failpointSources.Unlock()
	if src, ok := failpointSources.byVersion[version]; ok {
		return src, nil
	}
	m, err := etcdFailpointModule(version)
	if err != nil {
		return failpointSource{}, err
	}
	mv := m.server
	dir, err := moduleCacheDir(ctx, etcdServerModule, mv)
	if err != nil {
		return failpointSource{}, fmt.Errorf("etcd %s's source: %w", version, err)
	}
	pkgs, fps, err := readFailpoints(os.DirFS(dir))
	if err != nil {
		return failpointSource{}, fmt.Errorf("etcd %s's failpoints (%s@%s): %w", version, etcdServerModule, mv, err)
	}
	if len(fps) == 0 {
		return failpointSource{}, fmt.Errorf("etcd %s (%s@%s) marks no failpoint in %s", version, etcdServerModule, mv, strings.Join(etcdFailpointPackages, ", "))
	}
	src := failpointSource{dir: dir, packages: pkgs, failpoints: fps}
	if failpointSources.byVersion == nil {
		failpointSources.byVersion = map[string]failpointSource{}
	}
	failpointSources.byVersion[version] = src
	return src, nil
}

// moduleCacheDir is where Go's module cache holds module@version,
// downloading it from the module proxy first if it must. It runs outside
// any module (a fresh temporary directory, GOWORK off, no -mod flag), so
// neither this checkout nor the user's GOFLAGS change what it fetches.
func moduleCacheDir(ctx context.Context, module, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "fencecheck-modcache-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out, err := goTool(ctx, tmp, nil, "mod", "download", "-json", module+"@"+version)
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr == nil && m.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, m.Error)
	}
	if err != nil {
		return "", err
	}
	if m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s named no directory", module, version)
	}
	return m.Dir, nil
}

// goTool runs the host's go with args in dir, with the build
// configuration every fencecheck compile shares (CGO_ENABLED=0, no VCS
// stamping, no workspace), no -mod flag of the user's, and modules from
// the module proxy alone, as a release's plain build (moduleProxy); it
// returns stdout. progress, when set, gets its stderr as it comes.
func goTool(ctx context.Context, dir string, progress io.Writer, args ...string) ([]byte, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, &noToolchainError{}
	}
	proxy, err := moduleProxy(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off", "GOPROXY="+proxy)
	var stdout bytes.Buffer
	var stderr strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if progress != nil {
		cmd.Stderr = io.MultiWriter(progress, &stderr)
	}
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// failpointMarker is gofail's marker of a failpoint: `// gofail: var NAME
// TYPE`. A label (`// gofail: labelX:`) is none.
var failpointMarker = regexp.MustCompile(`^\s*// gofail: var ([A-Za-z_][A-Za-z0-9_]*) (\S+)\s*$`)

// readFailpoints reads a server module's source (fsys is its root) for the
// packages of etcdFailpointPackages it has, and their failpoints, sorted
// by name. A package that uses a marker gofail v0.2.0 does not know
// (`// gofail-go:`, 3.5's and 3.6's rafthttp) is left out, as etcd's own
// lists leave it out: enabling it would leave the label its markers name
// unused, which does not compile. Test files are not read: their
// failpoints are not in the binary.
func readFailpoints(fsys fs.FS) (packages []string, fps []Failpoint, err error) {
	for _, pkg := range etcdFailpointPackages {
		entries, err := fs.ReadDir(fsys, pkg)
		if err != nil {
			continue // not in this release's layout
		}
		var found []Failpoint
		unknownMarker := false
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			b, err := fs.ReadFile(fsys, pkg+"/"+name)
			if err != nil {
				return nil, nil, err
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if strings.Contains(line, "// gofail-go:") {
					unknownMarker = true
				}
				if m := failpointMarker.FindStringSubmatch(line); m != nil {
					found = append(found, Failpoint{Name: m[1], Type: m[2], Package: pkg})
				}
			}
			if err := sc.Err(); err != nil {
				return nil, nil, fmt.Errorf("%s/%s: %w", pkg, name, err)
			}
		}
		if unknownMarker || len(found) == 0 {
			continue // nothing gofail could rewrite here
		}
		packages = append(packages, pkg)
		fps = append(fps, found...)
	}
	sort.Slice(fps, func(i, j int) bool { return fps[i].Name < fps[j].Name })
	return packages, fps, nil
}

// EtcdFailpointBinary returns version's failpoint build for linux/goarch:
// from this process, from the user's cache (beside the plain binary,
// under its own name), or compiled there now (a minute or two, once).
func EtcdFailpointBinary(ctx context.Context, version, goarch string, progress io.Writer) ([]byte, error) {
	m, err := etcdFailpointModule(version)
	if err != nil {
		return nil, err
	}
	if progress == nil {
		progress = io.Discard
	}
	etcdBuilt.Lock()
	defer etcdBuilt.Unlock()
	key := "failpoints/" + version + "/" + archOrAmd64(goarch)
	if b := etcdBuilt.bins[key]; b != nil {
		return b, nil
	}
	out := buildOutputOf(progress)
	path := etcdFailpointCachePath(version, m.files, goarch)
	b, err := compileOnce(ctx, out, serverCompile{Name: "etcd " + version + " with failpoints", Arch: archOrAmd64(goarch), Path: path,
		Step: fmt.Sprintf("etcd %s failpoint build (gofail enable, go build)", version),
		Build: func(progress io.Writer) ([]byte, error) {
			return buildEtcdFailpoints(ctx, version, m, goarch, progress)
		}})
	if err != nil {
		return nil, err
	}
	return keepEtcd(key, b), nil
}

func keepEtcd(key string, b []byte) []byte {
	if etcdBuilt.bins == nil {
		etcdBuilt.bins = map[string][]byte{}
	}
	etcdBuilt.bins[key] = b
	return b
}

// etcdFailpointCachePath is where the failpoint build of version for
// goarch is kept: its own name beside the plain binary's, carrying the
// hash of the wrapper module, gofail's version and the package list, so a
// change to any of them never finds an old binary.
func etcdFailpointCachePath(version string, files map[string]string, goarch string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00%s", name, len(files[name]), files[name])
	}
	fmt.Fprintf(h, "gofail\x00%s@%s\x00%s", GofailModule, GofailVersion, strings.Join(etcdFailpointPackages, ","))
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	return filepath.Join(dir, "fencecheck", fmt.Sprintf("%s-%s-linux-%s", EtcdFailpointBinaryName(version), sum, archOrAmd64(goarch)))
}

// buildEtcdFailpoints makes the failpoint build in a temporary directory
// (the layout is the file's comment above).
func buildEtcdFailpoints(ctx context.Context, version string, m failpointModule, goarch string, progress io.Writer) ([]byte, error) {
	start := time.Now()
	src, err := etcdFailpointSource(ctx, version)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "fencecheck-"+etcdModuleDir(version)+"-failpoints-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	server, wrapper := filepath.Join(tmp, "server"), filepath.Join(tmp, "wrapper")
	// os.CopyFS makes every file 0666 and every directory 0777 (less the
	// umask): the copy is writable where the module cache is not.
	if err := os.CopyFS(server, os.DirFS(src.dir)); err != nil {
		return nil, fmt.Errorf("copying %s out of the module cache: %w", src.dir, err)
	}
	fmt.Fprintf(progress, "compose: gofail enable over %s (%d failpoints)\n", strings.Join(src.packages, ", "), len(src.failpoints))
	if _, err := goTool(ctx, server, progress, append([]string{"run", GofailModule + "@" + GofailVersion, "enable"}, src.packages...)...); err != nil {
		return nil, fmt.Errorf("gofail enable: %w", err)
	}
	if _, err := goTool(ctx, server, progress, "mod", "edit", "-require="+GofailModule+"@"+GofailVersion); err != nil {
		return nil, err
	}
	if err := os.Mkdir(wrapper, 0o755); err != nil {
		return nil, err
	}
	for name, text := range m.files {
		if err := os.WriteFile(filepath.Join(wrapper, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	if _, err := goTool(ctx, wrapper, progress, "mod", "edit", "-replace="+etcdServerModule+"=../server"); err != nil {
		return nil, err
	}
	if m.tidy {
		// An exact release's module is completed as its plain build's is
		// (Release.build), gofail's requirement with it.
		if _, err := goTool(ctx, wrapper, progress, "mod", "edit", "-require="+GofailModule+"@"+GofailVersion); err != nil {
			return nil, err
		}
		if _, err := goTool(ctx, wrapper, progress, "mod", "tidy"); err != nil {
			return nil, err
		}
	} else if _, err := goTool(ctx, wrapper, progress, "get", GofailModule+"@"+GofailVersion); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "compose: compiling etcd %s with failpoints (linux/%s, CGO_ENABLED=0)\n", version, archOrAmd64(goarch))
	proxy, err := moduleProxy(ctx)
	if err != nil {
		return nil, err
	}
	b, err := staticGoBuild(ctx, staticBuild{Dir: wrapper, Pkg: ".", Name: EtcdFailpointBinaryName(version), GoArch: goarch,
		LdFlags: "-s -w", GoFlags: "-mod=readonly -buildvcs=false", Env: []string{"GOWORK=off", "GOPROXY=" + proxy}, Trimpath: true}, progress)
	var noGo *noToolchainError
	switch {
	case errors.As(err, &noGo):
		return nil, fmt.Errorf("building etcd %s with failpoints needs the Go toolchain, and `go` is not on PATH", version)
	case err != nil:
		return nil, fmt.Errorf("compiling etcd %s with failpoints: %w", version, err)
	}
	fmt.Fprintf(progress, "compose: compiled etcd %s with failpoints in %s (%.0f MB)\n", version, time.Since(start).Round(time.Second), float64(len(b))/1e6)
	return b, nil
}
