package harness

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
