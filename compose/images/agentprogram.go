package images

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/buildlock"
)

// An agent program is a backend's own agent, a main package of this
// module that the client containers run beside the check binary
// (registry.Info.Agent): the kubernetes backend's clients link client-go,
// which would otherwise be two fifths of the check binary's packages.
// Like kube-apiserver, it is compiled on first use; unlike it, it is
// compiled from this repository's own source, so it is made for one check
// binary and kept under that binary's hash: the two never disagree about
// the agent protocol or the client's spec.

// ModulePath is this module's path: what a go.mod must declare for its
// directory to be taken as the source an agent program is compiled from.
const ModulePath = "github.com/fencecheck/fencecheck"

// AgentProgram is a program to get for the client containers.
type AgentProgram struct {
	// Name is its file name (check-kubernetes): in the nodes, in the
	// cache and beside the check binary.
	Name string
	// Package is its main package relative to the module's root
	// (./cmd/check-kubernetes).
	Package string
	// What says what it is (the kubernetes agent, client-go's leader
	// election).
	What string
}

// AgentProgramBinary returns program p's static binary for linux/goarch,
// made for the check binary at checkBinary (the one going into the
// containers), looking in this order:
//
//  1. this process's memory, where an earlier run put it;
//  2. the user's cache, os.UserCacheDir()/fencecheck/<name>-<first 12 hex
//     digits of checkBinary's sha256>-linux-<arch>;
//  3. a file <name> beside the running check binary (os.Executable's
//     directory), built there by hand — used, not copied into the cache;
//  4. compiled now with the host's Go toolchain from the source the
//     running binary was built from (its module root, found from the path
//     the compiler recorded for this file), and kept in the cache (with
//     the agentProgramsKept newest copies; older ones are removed).
//
// When none of these can give it (no source: a -trimpath build or a
// binary moved away from its checkout; no `go` on PATH), the error says
// how to build it beside the check binary. Progress goes to progress, the
// compile as a step with its time. The binary's From says where it came
// from, for the run's log.
func AgentProgramBinary(ctx context.Context, p AgentProgram, checkBinary, goarch string, progress io.Writer) (ProgramBinary, error) {
	return agentPrograms.get(ctx, p, checkBinary, goarch, progress)
}

// ProgramBinary is an agent program's binary and where it was found.
type ProgramBinary struct {
	Data []byte
	// From says where it came from: "from the cache, <path>", "beside
	// the check binary, <path>" or "compiled from <module root>, kept in
	// <path>".
	From string
}

// programFinder is the lookup behind AgentProgramBinary, with the places
// it reads as fields so that its order can be tested.
type programFinder struct {
	mu  sync.Mutex
	mem map[string]ProgramBinary // by cacheName
	// cacheDir is fencecheck's directory in the user's cache.
	cacheDir func() (string, error)
	// exeDir is the running check binary's directory.
	exeDir func() (string, error)
	// source is this file's path as the compiler recorded it: absolute,
	// unless the binary was built with -trimpath.
	source string
	// build compiles a static binary (staticGoBuild).
	build func(ctx context.Context, b staticBuild, progress io.Writer) ([]byte, error)
}

var agentPrograms = &programFinder{
	cacheDir: func() (string, error) {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "fencecheck"), nil
	},
	exeDir: func() (string, error) {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		return filepath.Dir(exe), nil
	},
	source: thisSource(),
	build:  staticGoBuild,
}

// thisSource is the path of this file as compiled into the binary.
func thisSource() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	return file
}

// AgentProgramCacheName is the cache's name for p's binary for
// linux/goarch made for the check binary whose sha256 is checkSum (hex).
func AgentProgramCacheName(p AgentProgram, checkSum, goarch string) string {
	return fmt.Sprintf("%s-%s-linux-%s", p.Name, checkSum[:min(12, len(checkSum))], archOrAmd64(goarch))
}

func (f *programFinder) get(ctx context.Context, p AgentProgram, checkBinary, goarch string, progress io.Writer) (ProgramBinary, error) {
	if p.Name == "" || p.Package == "" {
		return ProgramBinary{}, errors.New("an agent program needs a name and a package")
	}
	arch := archOrAmd64(goarch)
	sum, err := fileSum(checkBinary)
	if err != nil {
		return ProgramBinary{}, fmt.Errorf("%s: hashing the check binary %s, whose build it must match: %w", p.Name, checkBinary, err)
	}
	name := AgentProgramCacheName(p, sum, arch)
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.mem[name]; ok {
		return b, nil
	}
	out := buildOutputOf(progress)
	// Why each place could not give it, for the error if none can.
	var missed []string

	cachePath := ""
	if dir, err := f.cacheDir(); err != nil {
		missed = append(missed, fmt.Sprintf("no user cache directory (%v)", err))
	} else {
		cachePath = filepath.Join(dir, name)
		pb, ok, why := f.tryPlace(out, p, name, arch, cachePath, place{from: "from the cache", absent: "not in the cache", unusable: "the cache's copy"})
		if ok {
			return pb, nil
		}
		missed = append(missed, why)
	}

	exeDir, err := f.exeDir()
	if err != nil {
		missed = append(missed, fmt.Sprintf("the running check binary's directory is unknown (%v)", err))
	} else {
		beside := filepath.Join(exeDir, p.Name)
		pb, ok, why := f.tryPlace(out, p, name, arch, beside, place{from: "beside the check binary", absent: "not beside the check binary", unusable: "the copy beside the check binary"})
		if ok {
			return pb, nil
		}
		missed = append(missed, why)
	}

	root, err := moduleRoot(f.source, p.Package)
	if err == nil && cachePath != "" {
		// One compile a machine: a process that waited for another's
		// finds it in the cache.
		var release func()
		if release, err = buildlock.Acquire(ctx, name, p.Name+"'s compile", out); err != nil {
			return ProgramBinary{}, err
		}
		defer release()
		if pb, ok, _ := f.tryPlace(out, p, name, arch, cachePath, place{from: "from the cache", absent: "not in the cache", unusable: "the cache's copy"}); ok {
			return pb, nil
		}
	}
	if err == nil {
		var b []byte
		if b, err = f.compile(ctx, p, root, arch, cachePath, out); err == nil {
			from := "compiled from " + root
			if cachePath != "" {
				from += ", kept in " + cachePath
			}
			return f.keep(name, b, from), nil
		}
		if ctx.Err() != nil {
			return ProgramBinary{}, err
		}
	}
	missed = append(missed, "not compiled here: "+err.Error())
	where := "the repository's root"
	if root != "" {
		where = root
	}
	dir := exeDir
	if dir == "" {
		dir = "bin"
	}
	env := "CGO_ENABLED=0"
	if runtime.GOOS != "linux" || runtime.GOARCH != arch {
		env += " GOOS=linux GOARCH=" + arch
	}
	return ProgramBinary{}, fmt.Errorf("%s (%s) for linux/%s: %s. Build it beside the check binary, in %s: %s go build -o %s %s",
		p.Name, p.What, arch, strings.Join(missed, "; "), where, env, filepath.Join(dir, p.Name), p.Package)
}

func (f *programFinder) keep(name string, b []byte, from string) ProgramBinary {
	if f.mem == nil {
		f.mem = map[string]ProgramBinary{}
	}
	pb := ProgramBinary{Data: b, From: from}
	f.mem[name] = pb
	return pb
}

// compile builds p in the module at root and keeps it at cachePath ("":
// no cache), as one build step.
func (f *programFinder) compile(ctx context.Context, p AgentProgram, root, arch, cachePath string, out *BuildOutput) ([]byte, error) {
	step := out.Begin(fmt.Sprintf("%s compile (go build %s, once per check binary)", p.Name, p.Package))
	fmt.Fprintf(step, "compose: compiling %s, %s (go build %s in %s, linux/%s, CGO_ENABLED=0; once per check binary: it is kept in the cache)\n",
		p.Name, p.What, p.Package, root, arch)
	b, err := f.build(ctx, staticBuild{Dir: root, Pkg: p.Package, Name: p.Name, GoArch: arch, GoFlags: "-buildvcs=false"}, step)
	var noGo *noToolchainError
	switch {
	case errors.As(err, &noGo):
		err = errors.New("the Go toolchain is not on PATH")
	case err == nil:
		err = checkELF(b, arch)
	}
	if err != nil {
		return nil, step.Fail(err, ctx.Err() != nil)
	}
	detail, kept := keepCompiled(cachePath, b)
	if kept {
		pruneAgentPrograms(cachePath, p, arch)
	}
	step.Done(detail)
	return b, nil
}

// agentProgramsKept is how many of a program's compiles for one
// architecture the cache keeps: each check build makes its own (tens of
// MB), and a developer rebuilds check many times a day.
const agentProgramsKept = 4

// pruneAgentPrograms removes the oldest cached copies of p for arch
// beyond agentProgramsKept, never keep (the one just written). A check
// binary whose copy went compiles it again on its next run; errors are
// ignored, nothing depends on pruning.
func pruneAgentPrograms(keep string, p AgentProgram, arch string) {
	paths, err := filepath.Glob(filepath.Join(filepath.Dir(keep), p.Name+"-*-linux-"+arch))
	if err != nil {
		return
	}
	type cached struct {
		path string
		mod  time.Time
	}
	var others []cached
	for _, path := range paths {
		if path == keep {
			continue
		}
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			others = append(others, cached{path, fi.ModTime()})
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].mod.After(others[j].mod) })
	for i, c := range others {
		if i >= agentProgramsKept-1 {
			os.Remove(c.path)
		}
	}
}

// readProgram reads a program's binary from path and checks that it is a
// Linux executable for arch. An absent file is os.ErrNotExist.
func readProgram(path, arch string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := checkELF(b, arch); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// elfMachines are the engine architectures a node can run, as ELF
// machines.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkELF says whether b is a Linux executable for arch.
func checkELF(b []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not a Linux executable (%v)", err)
	}
	defer f.Close()
	if want, ok := elfMachines[arch]; ok && f.Machine != want {
		return fmt.Errorf("built for %s, not for the engine's %s", f.Machine, arch)
	}
	return nil
}

// fileSum is the hex sha256 of the file at path.
func fileSum(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// moduleRoot finds the root of the module source was compiled from (the
// directory above it whose go.mod declares ModulePath) and checks that it
// holds pkg. Its error says why the source cannot be used.
func moduleRoot(source, pkg string) (string, error) {
	switch {
	case source == "":
		return "", errors.New("this binary does not know where its source is")
	case !filepath.IsAbs(source):
		return "", fmt.Errorf("this check binary was built with -trimpath, so it does not know where its source is (it recorded %s)", source)
	}
	for dir := filepath.Dir(source); ; dir = filepath.Dir(dir) {
		mod, err := goModModule(filepath.Join(dir, "go.mod"))
		switch {
		case err == nil && mod != ModulePath:
			return "", fmt.Errorf("the source this binary was built from (%s) is not there: %s holds module %s, not %s", filepath.Dir(source), dir, mod, ModulePath)
		case err == nil:
			if !hasGoFiles(filepath.Join(dir, filepath.FromSlash(pkg))) {
				return "", fmt.Errorf("the source at %s has no package %s (an older checkout?)", dir, pkg)
			}
			return dir, nil
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		}
		if parent := filepath.Dir(dir); parent == dir {
			return "", fmt.Errorf("the source this binary was built from (%s) is not on this machine", filepath.Dir(source))
		}
	}
}

// goModModule reads the module path a go.mod declares.
func goModModule(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s declares no module", path)
}

// hasGoFiles says whether dir holds a .go file.
func hasGoFiles(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			return true
		}
	}
	return false
}

// place is how a lookup words one place it reads a program from: where
// it came from, that it was not there, and the copy that was unusable.
type place struct{ from, absent, unusable string }

// tryPlace reads p's binary at path: the binary, kept in memory under name
// and said on out, or false and why this place missed.
func (f *programFinder) tryPlace(out io.Writer, p AgentProgram, name, arch, path string, pl place) (ProgramBinary, bool, string) {
	b, err := readProgram(path, arch)
	switch {
	case err == nil:
		fmt.Fprintf(out, "compose: %s (linux/%s) %s, %s\n", p.Name, arch, pl.from, path)
		return f.keep(name, b, pl.from+", "+path), true, ""
	case errors.Is(err, os.ErrNotExist):
		return ProgramBinary{}, false, pl.absent + " (" + path + ")"
	default:
		return ProgramBinary{}, false, fmt.Sprintf("%s is unusable (%v)", pl.unusable, err)
	}
}
