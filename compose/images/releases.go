package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Release is one exact release of a lock server that fencecheck compiles
// from the Go module proxy on first use (etcd 3.5.4, nats-server
// 2.10.22), kept in the user's cache apart from every other release and
// copied into the server nodes, as the series builds (etcd 3.5, 3.7,
// nats-server 2.15) are.
//
// Unlike a series build, a release embeds no wrapper module. Its go.mod
// is written at build time, requiring Module at exactly v<Version> (and,
// for a wrapper command, Main, one source shared by every release of the
// server), and `go mod tidy` completes it against the Go module proxy,
// which checks the hash of every module it fetches against the checksum
// database (GOSUMDB: sum.golang.org, reached through the proxy). The
// build list that comes out is the release's own: minimal version
// selection over go.mod files that the checksum database makes
// immutable picks the same versions every time, so an embedded go.sum
// per release would only repeat what sum.golang.org already guarantees,
// at some 30 kB and one more generated file for each release the table
// of known bugs names. The series builds keep their embedded modules:
// etcd 3.6 goes into the node image, whose hash must not wait on the
// network.
//
// A release compiles with the host's Go toolchain and the go directive
// of fencecheck's own module: each dependency keeps the language version
// its own go.mod declares (etcd 3.5.x says go 1.16), and etcd 3.5.2 to
// 3.5.6 with their own grpc 1.38 and OpenTelemetry 0.20 compiled and ran
// under Go 1.26 with no replace directive (docs/versions.md).
type Release struct {
	// Name is the binary's name ("etcd", "nats-server"); the file in the
	// cache and the nodes is Name-Version.
	Name string
	// Module is the Go module of the server's release ("go.etcd.io/etcd/server/v3").
	Module string
	// Version is the exact release, without the v ("3.5.4").
	Version string
	// Pkg is the package `go build` compiles: "." for Main, or the
	// command's import path inside Module, named by a tool directive.
	Pkg string
	// Main is the wrapper command's source (main.go), "" when Pkg is the
	// release's own command.
	Main string
}

// releaseGoDirective is the go directive of a release's generated
// module: fencecheck's own language version, as the series modules have.
const releaseGoDirective = "1.26.0"

// releaseLdFlags strip the symbol table and DWARF, as the series builds.
const releaseLdFlags = "-s -w"

// exactRelease matches an exact release: major.minor.patch, digits only,
// no leading v and no pre-release.
var exactRelease = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// ParseRelease reads an exact release ("3.5.4") into its three numbers;
// ok is false for anything else (a series "3.5", "v3.5.4", "3.5.4-rc.0").
func ParseRelease(v string) (major, minor, patch int, ok bool) {
	m := exactRelease.FindStringSubmatch(v)
	if m == nil {
		return 0, 0, 0, false
	}
	var n [3]int
	for i := range n {
		x, err := strconv.Atoi(m[i+1])
		if err != nil {
			return 0, 0, 0, false
		}
		n[i] = x
	}
	return n[0], n[1], n[2], true
}

// String names the release as messages do: "etcd 3.5.4".
func (r Release) String() string { return r.Name + " " + r.Version }

// FileName is the binary's file name in the nodes: etcd-3.5.4.
func (r Release) FileName() string { return r.Name + "-" + r.Version }

func (r Release) valid() error {
	if r.Name == "" || r.Module == "" || r.Pkg == "" {
		return errors.New("images: a release needs a name, a module and a package")
	}
	if _, _, _, ok := ParseRelease(r.Version); !ok {
		return fmt.Errorf("images: %q is not an exact release (major.minor.patch, e.g. 3.5.4)", r.Version)
	}
	if (r.Pkg == ".") != (r.Main != "") {
		return errors.New("images: a release builds either its wrapper command (package \".\" with Main) or a command of its module")
	}
	return nil
}

// goMod is the generated wrapper module's go.mod before `go mod tidy`.
func (r Release) goMod() string {
	var b strings.Builder
	fmt.Fprintf(&b, "module fencecheck.local/%s\n\ngo %s\n\n", strings.ReplaceAll(r.FileName(), ".", "_"), releaseGoDirective)
	if r.Main == "" {
		fmt.Fprintf(&b, "tool %s\n\n", r.Pkg)
	}
	fmt.Fprintf(&b, "require %s v%s\n", r.Module, r.Version)
	return b.String()
}

// cacheName is the binary's file name in the cache: the release, the
// hash of everything that makes its build (the generated go.mod, the
// wrapper's source, the package and the linker's flags) and the
// platform, so a changed wrapper never finds an old binary and no two
// releases share one.
func (r Release) cacheName(goarch string) string {
	h := sha256.New()
	fmt.Fprintf(h, "release\x00%s\x00%d\x00%s\x00pkg\x00%s\x00ldflags\x00%s", r.goMod(), len(r.Main), r.Main, r.Pkg, releaseLdFlags)
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	return fmt.Sprintf("%s-%s-linux-%s", r.FileName(), sum, archOrAmd64(goarch))
}

// releaseCachePath is where the binary of r for goarch is kept, or ""
// when the user has no cache directory.
func (r Release) cachePath(goarch string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "fencecheck", r.cacheName(goarch))
}

// Cached says whether r's binary for goarch is in the user's cache.
func (r Release) Cached(goarch string) bool {
	path := r.cachePath(goarch)
	if path == "" {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Size() > 0
}

// releaseBuilt keeps what Release.Binary handed out in this process, so
// a matrix of runs reads each binary once and never compiles one twice
// side by side.
var releaseBuilt struct {
	sync.Mutex
	bins map[string][]byte
}

// Binary returns r's server for linux/goarch: from this process, from
// the user's cache (os.UserCacheDir()/fencecheck), or resolved and
// compiled there now as a visible, timed step of progress (a minute or
// two the first time, once per machine and release).
func (r Release) Binary(ctx context.Context, goarch string, progress io.Writer) ([]byte, error) {
	if err := r.valid(); err != nil {
		return nil, err
	}
	if progress == nil {
		progress = io.Discard
	}
	releaseBuilt.Lock()
	defer releaseBuilt.Unlock()
	name := r.cacheName(goarch)
	if b := releaseBuilt.bins[name]; b != nil {
		return b, nil
	}
	out := buildOutputOf(progress)
	path := r.cachePath(goarch)
	b, err := compileOnce(ctx, out, serverCompile{Name: r.String(), Arch: archOrAmd64(goarch), Path: path,
		Step:  fmt.Sprintf("%s compile (go mod tidy, go build)", r),
		Build: func(progress io.Writer) ([]byte, error) { return r.build(ctx, goarch, progress) }})
	if err != nil {
		return nil, err
	}
	return r.keep(name, b), nil
}

func (r Release) keep(name string, b []byte) []byte {
	if releaseBuilt.bins == nil {
		releaseBuilt.bins = map[string][]byte{}
	}
	releaseBuilt.bins[name] = b
	return b
}

// build writes the wrapper module in a temporary directory, completes it
// with `go mod tidy` and compiles it as a static binary for linux/goarch.
func (r Release) build(ctx context.Context, goarch string, progress io.Writer) ([]byte, error) {
	proxy, err := moduleProxy(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fencecheck-"+r.FileName()+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(r.goMod()), 0o644); err != nil {
		return nil, err
	}
	if r.Main != "" {
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(r.Main), 0o644); err != nil {
			return nil, err
		}
	}
	env := []string{"GOWORK=off", "GOPROXY=" + proxy}
	fmt.Fprintf(progress, "compose: resolving %s's modules (go mod tidy against GOPROXY=%s; each module's hash checked against GOSUMDB)\n", r, proxy)
	start := time.Now()
	if err := goCommand(ctx, dir, append(env, "GOFLAGS=-mod=mod"), progress, "mod", "tidy"); err != nil {
		return nil, fmt.Errorf("resolving %s (go mod tidy of a module requiring %s v%s): %w", r, r.Module, r.Version, err)
	}
	tidy := time.Since(start)
	fmt.Fprintf(progress, "compose: compiling %s (linux/%s, CGO_ENABLED=0; once: it is kept in the cache)\n", r, archOrAmd64(goarch))
	start = time.Now()
	b, err := staticGoBuild(ctx, staticBuild{Dir: dir, Pkg: r.Pkg, Name: r.Name, GoArch: goarch,
		LdFlags: releaseLdFlags, GoFlags: "-mod=readonly -buildvcs=false", Env: env, Trimpath: true}, progress)
	var noGo *noToolchainError
	switch {
	case errors.As(err, &noGo):
		return nil, fmt.Errorf("building %s needs the Go toolchain, and `go` is not on PATH", r)
	case err != nil:
		return nil, fmt.Errorf("compiling %s (go build of a module requiring %s v%s): %w", r, r.Module, r.Version, err)
	}
	fmt.Fprintf(progress, "compose: %s: modules resolved in %s, compiled in %s (%.0f MB)\n", r, tidy.Round(100*time.Millisecond),
		time.Since(start).Round(100*time.Millisecond), float64(len(b))/1e6)
	return b, nil
}

// goCommand runs the host's go with args in dir, its output to progress;
// a failure's error carries what it wrote to stderr.
func goCommand(ctx context.Context, dir string, env []string, progress io.Writer, args ...string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return &noToolchainError{}
	}
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stdout = progress
	cmd.Stderr = io.MultiWriter(progress, &stderr)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n%s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// NotServedError says that the Go module proxy does not serve a release:
// it answered that the version does not exist or is not available.
type NotServedError struct {
	Release Release
	// Answer is the go command's own words.
	Answer string
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("the Go module proxy does not serve %s (%s@v%s): %s", e.Release, e.Release.Module, e.Release.Version, e.Answer)
}

// served keeps the proxy's answers in this process: each release is
// asked about once.
var served sync.Map // module@version -> error (nil: served)

// Served asks the Go module proxy whether it serves r, by its exact
// version (`go list -m Module@vVersion`: the proxy serves releases its
// version list omits). nil: it does, or r is already compiled in the
// cache for some platform, or the module cache holds it (go answers from
// there without the network). A *NotServedError: the proxy says there is
// no such version. Any other error: the proxy could not be asked.
func (r Release) Served(ctx context.Context) error {
	if err := r.valid(); err != nil {
		return err
	}
	key := r.Module + "@v" + r.Version
	if err, ok := served.Load(key); ok {
		if err == nil {
			return nil
		}
		return err.(error)
	}
	if r.anyCached() {
		return nil
	}
	err := r.askProxy(ctx)
	var ns *NotServedError
	if err == nil || errors.As(err, &ns) {
		served.Store(key, err)
	}
	return err
}

// anyCached: r's binary is in the cache for some platform, so the proxy
// served it once (a release never leaves the proxy or changes).
func (r Release) anyCached() bool {
	dir, err := os.UserCacheDir()
	if err != nil {
		return false
	}
	base := r.cacheName("")
	prefix := strings.TrimSuffix(base, "amd64")
	matches, _ := filepath.Glob(filepath.Join(dir, "fencecheck", prefix+"*"))
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() && st.Size() > 0 && !strings.Contains(filepath.Base(m[len(prefix):]), ".") {
			return true
		}
	}
	return false
}

// notServed matches what go says when the proxy has no such version:
// 404 or 410 (proxy.golang.org), 403 "not available", a file:// proxy
// without the file, or a version go itself rejects.
var notServed = regexp.MustCompile(`(?i)\b(404|410|403)\b|not found|no such file or directory|unknown revision|invalid version|not available|no matching versions`)

func (r Release) askProxy(ctx context.Context) error {
	proxy, err := moduleProxy(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fencecheck-served-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out strings.Builder
	err = goCommand(ctx, dir, []string{"GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=" + proxy}, &out, "list", "-m", "-json", r.Module+"@v"+r.Version)
	var noGo *noToolchainError
	switch {
	case errors.As(err, &noGo):
		return fmt.Errorf("building %s needs the Go toolchain, and `go` is not on PATH", r)
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("asking the Go module proxy (%s) for %s@v%s: no answer within a minute", proxy, r.Module, r.Version)
	}
	answer := lastLine(err.Error())
	if notServed.MatchString(answer) {
		return &NotServedError{Release: r, Answer: answer}
	}
	return fmt.Errorf("asking the Go module proxy (%s) for %s@v%s: %s", proxy, r.Module, r.Version, answer)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if i > 0 && strings.HasPrefix(l, "server response:") {
				return strings.TrimSpace(lines[i-1]) + " " + l
			}
			return l
		}
	}
	return s
}

// moduleProxy is the GOPROXY a release is fetched through: the user's
// (go env GOPROXY), without its "direct" entries. A release comes from a
// module proxy, whose versions never change, or from the module cache,
// never from a clone of the project's repository: a version the proxy
// does not serve is refused, not fetched from GitHub by git. "off" when
// the user's GOPROXY names no proxy: the module cache alone.
func moduleProxy(ctx context.Context) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", &noToolchainError{}
	}
	out, err := exec.CommandContext(ctx, gobin, "env", "GOPROXY").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOPROXY: %w", err)
	}
	return proxyOnly(strings.TrimSpace(string(out))), nil
}

// proxyOnly drops "direct" and "off" from a GOPROXY list, keeping the
// separator after each proxy ("," falls through on 404 and 410 only, "|"
// on any error), or is "off" when no proxy is left.
func proxyOnly(goproxy string) string {
	var out strings.Builder
	for goproxy != "" {
		entry, sep := goproxy, ""
		if i := strings.IndexAny(goproxy, ",|"); i >= 0 {
			entry, sep, goproxy = goproxy[:i], goproxy[i:i+1], goproxy[i+1:]
		} else {
			goproxy = ""
		}
		switch entry = strings.TrimSpace(entry); entry {
		case "", "direct", "off":
			continue
		}
		out.WriteString(entry + sep)
	}
	if s := strings.TrimRight(out.String(), ",|"); s != "" {
		return s
	}
	return "off"
}

// ProxyAnswer is Served as a backend's registry entry asks it: notServed
// is the proxy's answer when it does not serve r; err says it could not
// be asked.
func (r Release) ProxyAnswer(ctx context.Context) (notServed string, err error) {
	err = r.Served(ctx)
	var ns *NotServedError
	if errors.As(err, &ns) {
		return ns.Error(), nil
	}
	return "", err
}
