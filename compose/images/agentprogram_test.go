package images

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/dockertest"
)

var testProgram = AgentProgram{Name: "check-kubernetes", Package: "./cmd/check-kubernetes", What: "the kubernetes agent, client-go's leader election"}

// elfHeader is the 64-byte header of an (empty) little-endian ELF64
// executable for machine: enough for debug/elf, and for the lookup's
// check of which architecture a binary is for.
func elfHeader(machine elf.Machine, tail string) []byte {
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	b.Write(make([]byte, 9))
	le := binary.LittleEndian
	for _, v := range []any{uint16(elf.ET_EXEC), uint16(machine), uint32(elf.EV_CURRENT), uint64(0), uint64(0), uint64(0), uint32(0),
		uint16(64), uint16(56), uint16(0), uint16(64), uint16(0), uint16(0)} {
		binary.Write(&b, le, v)
	}
	b.WriteString(tail)
	return b.Bytes()
}

// lookupWorld is the places a finder looks in, all in temporary
// directories: the cache, the check binary's directory with the check
// binary in it, and a source tree (a go.mod and the program's package).
type lookupWorld struct {
	cache, exeDir, root, check string
	builds                     []staticBuild
	// built is what a build returns; buildErr fails it.
	built    []byte
	buildErr error
}

func newLookupWorld(t *testing.T) *lookupWorld {
	t.Helper()
	w := &lookupWorld{cache: t.TempDir(), exeDir: t.TempDir(), root: t.TempDir(), built: elfHeader(elf.EM_X86_64, "compiled")}
	w.check = filepath.Join(w.exeDir, "check")
	mustWrite(t, w.check, "check build A")
	mustWrite(t, filepath.Join(w.root, "go.mod"), "// the module\nmodule "+ModulePath+"\n\ngo 1.26\n")
	mustWrite(t, filepath.Join(w.root, "cmd", "check-kubernetes", "main.go"), "package main\n")
	mustWrite(t, filepath.Join(w.root, "compose", "images", "agentprogram.go"), "package images\n")
	return w
}

func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// finder is a fresh lookup (empty memory) over w.
func (w *lookupWorld) finder() *programFinder {
	return &programFinder{
		cacheDir: func() (string, error) { return w.cache, nil },
		exeDir:   func() (string, error) { return w.exeDir, nil },
		source:   filepath.Join(w.root, "compose", "images", "agentprogram.go"),
		build: func(_ context.Context, b staticBuild, progress io.Writer) ([]byte, error) {
			w.builds = append(w.builds, b)
			return w.built, w.buildErr
		},
	}
}

// cachePath is where the cache keeps the program for w's check binary.
func (w *lookupWorld) cachePath(t *testing.T) string {
	t.Helper()
	sum, err := fileSum(w.check)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(w.cache, AgentProgramCacheName(testProgram, sum, "amd64"))
}

func get(t *testing.T, f *programFinder, w *lookupWorld) (string, error) {
	t.Helper()
	b, _, err := getFrom(t, f, w)
	return b, err
}

// getFrom is get with where the program came from.
func getFrom(t *testing.T, f *programFinder, w *lookupWorld) (string, string, error) {
	t.Helper()
	var out bytes.Buffer
	b, err := f.get(context.Background(), testProgram, w.check, "amd64", &out)
	return string(b.Data), b.From, err
}

// The order: this process's memory, the cache (named by the check
// binary's hash), a file beside the check binary, a compile from the
// source, which is then kept in the cache.
func TestAgentProgramLookupOrder(t *testing.T) {
	w := newLookupWorld(t)
	cached := string(elfHeader(elf.EM_X86_64, "cached"))
	beside := string(elfHeader(elf.EM_X86_64, "beside"))
	mustWrite(t, w.cachePath(t), cached)
	mustWrite(t, filepath.Join(w.exeDir, testProgram.Name), beside)

	f := w.finder()
	if got, from, err := getFrom(t, f, w); err != nil || got != cached || from != "from the cache, "+w.cachePath(t) {
		t.Fatalf("with a cached copy and one beside the check binary: got %q from %q, %v; want the cached one", got, from, err)
	}
	os.Remove(w.cachePath(t))
	if got, err := get(t, f, w); err != nil || got != cached {
		t.Fatalf("the same process asked again: got %q, %v; want the copy it already read", got, err)
	}

	f = w.finder()
	if got, from, err := getFrom(t, f, w); err != nil || got != beside || !strings.HasPrefix(from, "beside the check binary, ") {
		t.Fatalf("with no cached copy: got %q from %q, %v; want the one beside the check binary", got, from, err)
	}
	if _, err := os.Stat(w.cachePath(t)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy beside the check binary went into the cache (%v): a rebuilt one would never be seen", err)
	}

	os.Remove(filepath.Join(w.exeDir, testProgram.Name))
	f = w.finder()
	got, from, err := getFrom(t, f, w)
	if err != nil || got != string(w.built) || from != "compiled from "+w.root+", kept in "+w.cachePath(t) {
		t.Fatalf("with neither: got %q from %q, %v; want it compiled", got, from, err)
	}
	if len(w.builds) != 1 || w.builds[0].Dir != w.root || w.builds[0].Pkg != testProgram.Package || w.builds[0].GoArch != "amd64" {
		t.Fatalf("builds %+v, want one of %s in %s for amd64", w.builds, testProgram.Package, w.root)
	}
	if b, err := os.ReadFile(w.cachePath(t)); err != nil || string(b) != string(w.built) {
		t.Errorf("the compiled program was not kept in the cache: %v", err)
	}
	if got, err := get(t, w.finder(), w); err != nil || got != string(w.built) || len(w.builds) != 1 {
		t.Errorf("the next process compiled again (%d builds) or got %q, %v", len(w.builds), got, err)
	}

	// Another check binary has an agent of its own.
	mustWrite(t, w.check, "check build B")
	if _, err := get(t, w.finder(), w); err != nil || len(w.builds) != 2 {
		t.Errorf("a rebuilt check binary took the old one's agent (%d builds, %v)", len(w.builds), err)
	}
}

// A copy for another architecture, or not an executable at all, is passed
// over, and the reason shows if nothing else gives the program.
func TestAgentProgramForAnotherArchIsPassedOver(t *testing.T) {
	w := newLookupWorld(t)
	mustWrite(t, w.cachePath(t), "half a binary")
	mustWrite(t, filepath.Join(w.exeDir, testProgram.Name), string(elfHeader(elf.EM_AARCH64, "")))
	if got, err := get(t, w.finder(), w); err != nil || got != string(w.built) {
		t.Fatalf("got %q, %v; want it compiled", got, err)
	}
	w = newLookupWorld(t)
	mustWrite(t, filepath.Join(w.exeDir, testProgram.Name), string(elfHeader(elf.EM_AARCH64, "")))
	w.buildErr = &noToolchainError{}
	_, err := get(t, w.finder(), w)
	if err == nil || !strings.Contains(err.Error(), "built for EM_AARCH64, not for the engine's amd64") {
		t.Errorf("the error does not say why the copy beside the check binary was not used: %v", err)
	}
	w.built, w.buildErr = elfHeader(elf.EM_AARCH64, ""), nil
	_, err = get(t, w.finder(), w)
	if err == nil || !strings.Contains(err.Error(), "built for EM_AARCH64") {
		t.Errorf("a compile for the wrong architecture was accepted: %v", err)
	}
}

// When it cannot be had, the error says why for each place and names the
// command that builds it beside the check binary.
func TestAgentProgramErrorsNameTheFix(t *testing.T) {
	fix := func(w *lookupWorld) string {
		return "go build -o " + filepath.Join(w.exeDir, testProgram.Name) + " ./cmd/check-kubernetes"
	}
	for _, tc := range []struct {
		name  string
		setup func(w *lookupWorld, f *programFinder)
		want  []string
	}{
		{"a -trimpath build", func(w *lookupWorld, f *programFinder) {
			f.source = ModulePath + "/compose/images/agentprogram.go"
		}, []string{"-trimpath", "not in the cache", "not beside the check binary"}},
		{"no Go toolchain", func(w *lookupWorld, f *programFinder) {
			w.buildErr = &noToolchainError{}
		}, []string{"the Go toolchain is not on PATH"}},
		{"a source tree of another module", func(w *lookupWorld, f *programFinder) {
			mustWrite(t, filepath.Join(w.root, "go.mod"), "module example.com/other\n")
		}, []string{"holds module example.com/other"}},
		{"a checkout without the program", func(w *lookupWorld, f *programFinder) {
			os.RemoveAll(filepath.Join(w.root, "cmd"))
		}, []string{"has no package ./cmd/check-kubernetes"}},
		{"a source tree that is gone", func(w *lookupWorld, f *programFinder) {
			os.RemoveAll(w.root)
		}, []string{"is not on this machine"}},
		{"a failing compile", func(w *lookupWorld, f *programFinder) {
			w.buildErr = errors.New("exit status 1\nmain.go:1: syntax error")
		}, []string{"syntax error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newLookupWorld(t)
			f := w.finder()
			tc.setup(w, f)
			_, err := get(t, f, w)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, want := range append(tc.want, "check-kubernetes", fix(w)) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			if _, err := os.Stat(w.cachePath(t)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a failed lookup left something in the cache")
			}
		})
	}
	w := newLookupWorld(t)
	w.check = filepath.Join(w.exeDir, "no-such-check")
	if _, err := get(t, w.finder(), w); err == nil || !strings.Contains(err.Error(), "hashing the check binary") {
		t.Errorf("a missing check binary: %v", err)
	}
}

// This test binary, built without -trimpath, finds its module's root from
// the path the compiler recorded, as a check binary built the README's way
// does.
func TestModuleRootOfThisBuild(t *testing.T) {
	source := agentPrograms.source
	if !filepath.IsAbs(source) {
		t.Fatalf("the recorded source path %q is not absolute", source)
	}
	root, err := moduleRoot(source, "./compose/images")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs("../.."); root != want {
		t.Errorf("module root %s, want %s", root, want)
	}
	if _, err := moduleRoot(source, "./cmd/no-such-program"); err == nil {
		t.Error("a package the checkout does not have was accepted")
	}
}

// The compile is a real `go build` of a main package in the module's
// tree (a tiny one here), for linux/amd64, static, kept in the cache.
func TestAgentProgramCompilesWithTheGoToolchain(t *testing.T) {
	if testing.Short() && !dockertest.CI() {
		t.Skip("-short: compiles a program with the Go toolchain")
	}
	w := newLookupWorld(t)
	mustWrite(t, filepath.Join(w.root, "cmd", "check-kubernetes", "main.go"), "package main\n\nfunc main() { println(\"agent\") }\n")
	f := w.finder()
	f.build = staticGoBuild
	var out bytes.Buffer
	pb, err := f.get(context.Background(), testProgram, w.check, "amd64", NewBuildOutput(&out, BuildOutputOptions{}))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	b := pb.Data
	exe, err := elf.NewFile(bytes.NewReader(b))
	if err != nil || exe.Machine != elf.EM_X86_64 {
		t.Fatalf("not a linux/amd64 executable: %v", err)
	}
	if exe.Section(".interp") != nil {
		t.Error("the program is not static (it has an ELF interpreter)")
	}
	if !strings.Contains(out.String(), "check-kubernetes compile (go build ./cmd/check-kubernetes, once per check binary)") ||
		!strings.Contains(out.String(), "kept in "+w.cache) {
		t.Errorf("the compile is not shown as a step with where it was kept:\n%s", out.String())
	}
	if c, err := os.ReadFile(w.cachePath(t)); err != nil || !bytes.Equal(c, b) {
		t.Errorf("not kept in the cache: %v", err)
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		path := filepath.Join(t.TempDir(), "agent")
		os.WriteFile(path, b, 0o755)
		if got, err := runProgram(path); err != nil || got != "agent\n" {
			t.Errorf("the compiled program ran: %q, %v", got, err)
		}
	}
}

// runProgram runs the program at path and returns what it wrote.
func runProgram(path string) (string, error) {
	out, err := exec.Command(path).CombinedOutput()
	return string(out), err
}

// The cache keeps the newest agentProgramsKept compiles of a program for
// an architecture, the one just made among them; other programs and
// architectures are left alone.
func TestAgentProgramCacheKeepsTheNewest(t *testing.T) {
	w := newLookupWorld(t)
	old := time.Now().Add(-time.Hour)
	var olds []string
	for i := range 5 {
		path := filepath.Join(w.cache, fmt.Sprintf("check-kubernetes-00000000000%d-linux-amd64", i))
		mustWrite(t, path, "old")
		os.Chtimes(path, old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute))
		olds = append(olds, path)
	}
	others := []string{filepath.Join(w.cache, "check-kubernetes-000000000009-linux-arm64"), filepath.Join(w.cache, "kube-apiserver-v1.34.4-000000000000-linux-amd64")}
	for _, path := range others {
		mustWrite(t, path, "other")
		os.Chtimes(path, old.Add(-time.Hour), old.Add(-time.Hour))
	}
	if _, err := get(t, w.finder(), w); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{w.cachePath(t): true, olds[4]: true, olds[3]: true, olds[2]: true, others[0]: true, others[1]: true}
	entries, _ := os.ReadDir(w.cache)
	var got []string
	for _, e := range entries {
		path := filepath.Join(w.cache, e.Name())
		got = append(got, e.Name())
		if !want[path] {
			t.Errorf("%s was kept", e.Name())
		}
		delete(want, path)
	}
	for path := range want {
		t.Errorf("%s was removed (left: %v)", filepath.Base(path), got)
	}
}
