package harness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/nemesis"
)

// The harness asks backends/registry about backends and never names one:
// no non-test file here imports a backend's package. The shared storage's
// types (backends/fenced) and the registry are all it may use below
// backends/.
func TestHarnessImportsNoBackend(t *testing.T) {
	allowed := map[string]bool{"backends": true, "backends/fenced": true, "backends/registry": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := filepath.Glob(filepath.Join("*", "*.go"))
	files = append(files, sub...)
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rel, ok := strings.CutPrefix(path, "github.com/fencecheck/fencecheck/")
			if ok && strings.HasPrefix(rel, "backends") && !allowed[rel] {
				t.Errorf("%s imports %s: ask backends/registry instead", name, path)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}

// Nor does any non-test file here or in cmd/check name a backend, a fault
// or a cluster by string: no string literal is one of their names. What
// each accepts and needs is the registries' to say.
func TestHarnessAndCLINameNoBackendOrFault(t *testing.T) {
	names := map[string]string{}
	for _, b := range registry.All() {
		names[b.Name] = "backend"
		for _, c := range b.Clusters {
			names[string(c)] = "cluster"
		}
	}
	for _, f := range nemesis.Names() {
		if f != nemesis.None { // also a --fencing mode and the word for no active fault
			names[f] = "fault"
		}
	}
	files, _ := filepath.Glob("*.go")
	cli, _ := filepath.Glob(filepath.Join("..", "cmd", "check", "*.go"))
	checked := 0
	for _, name := range append(files, cli...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			if what, ok := names[s]; ok {
				t.Errorf("%s names the %s %q: ask the registry", fset.Position(lit.Pos()), what, s)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}
