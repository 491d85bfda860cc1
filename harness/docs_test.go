package harness

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/reports"
)

// The nemesis parameter is written as the flag takes it, so it can be
// pasted back into --nemesis.
func TestNemesisParamIsTheFlagsCommaList(t *testing.T) {
	cfg := Config{Backend: "memory", Fencing: "none", Nemesis: []string{"pause", "pause-holder"}}
	var got string
	for _, p := range reported(cfg).params(nil) {
		if p.Name == "nemesis" {
			got = p.Value
		}
	}
	if got != "pause,pause-holder" {
		t.Errorf("nemesis param %q, want pause,pause-holder", got)
	}
}

// repoRoot is the repository's top directory, seen from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod above the harness package: %v", err)
	}
	return root
}

func readRepo(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// derivedNames are every test name the harness derives (no --name) for
// one fault: backend-recipe-storage[-fencing]-fault.
func derivedNames() map[string]bool {
	out := map[string]bool{}
	for _, b := range registry.All() {
		for _, rc := range b.Recipes {
			for _, st := range append(registry.SharedStorages(), b.Storages...) {
				fencings := []string{"none", "writes", "all"}
				if !registry.IsSharedStorage(st) {
					fencings = []string{"none"}
				}
				for _, f := range fencings {
					for _, fault := range nemesis.Names() {
						cfg := Config{Backend: b.Name, Recipe: rc, Storage: st, Fencing: f, Nemesis: []string{fault}}
						out[defaulted(cfg).Name()] = true
					}
				}
			}
		}
	}
	return out
}

// Every run directory the docs and the help point at has a name the
// harness really makes.
func TestDocumentedRunNamesExist(t *testing.T) {
	names := derivedNames()
	if !names["memory-lease-fenced-none-pause"] || !names["etcd-mutex-etcd-pause-holder"] {
		t.Fatalf("derived names miss the obvious ones (%d names)", len(names))
	}
	backend := `(?:` + strings.Join(names2(), "|") + `)`
	pathRe := regexp.MustCompile(`store/(` + backend + `-[A-Za-z0-9+-]+)/`)
	nameRe := regexp.MustCompile(`"name": "(` + backend + `-[A-Za-z0-9+-]+)"`)
	files := []string{"README.md", "cmd/check/report.go", "cmd/check/run.go", "cmd/check/compare.go", "cmd/check/analyze.go", "cmd/check/serve.go"}
	docs, _ := filepath.Glob(filepath.Join(repoRoot(t), "docs", "*.md"))
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	checked := 0
	for _, f := range files {
		text := readRepo(t, f)
		for _, re := range []*regexp.Regexp{pathRe, nameRe} {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				checked++
				ok := true
				for _, part := range strings.Split(m[1], "+") {
					// Several faults are joined with +: the first part
					// carries the rest of the name.
					if !names[part] && !slices.Contains(nemesis.Names(), part) {
						ok = false
					}
				}
				if !ok {
					t.Errorf("%s points at %q, a name no run gets (names are backend-recipe-storage[-fencing]-nemesis, e.g. memory-lease-fenced-none-pause)", f, m[0])
				}
			}
		}
	}
	if checked < 4 {
		t.Errorf("only %d run names found in the docs: is the pattern still right?", checked)
	}
}

func names2() []string {
	var out []string
	for _, b := range registry.All() {
		out = append(out, b.Name)
	}
	return out
}

// docs/results.md's example and field list agree with what a run writes.
func TestResultsDocMatchesTheRun(t *testing.T) {
	doc := readRepo(t, "docs/results.md")
	sec := doc[strings.Index(doc, "## `params[]`"):]
	if i := strings.Index(sec[3:], "\n## "); i >= 0 {
		sec = sec[:i+3]
	}
	test := reported(Config{Backend: "memory", Fencing: "none", Nemesis: []string{"pause"}})
	cfg := test.Config()
	for _, p := range test.params(nil) {
		if !strings.Contains(sec, "`"+p.Name+"`") {
			t.Errorf("docs/results.md's params[] section does not list %q", p.Name)
		}
	}
	// The example is the README's in-process command: its name is the
	// one the harness derives.
	m := regexp.MustCompile(`"name": "([^"]+)"`).FindStringSubmatch(doc)
	if m == nil || m[1] != cfg.Name {
		t.Errorf("docs/results.md's example name is %q, a run of --backend memory --fencing none --nemesis pause is named %q", m, cfg.Name)
	}
	for _, field := range []string{"schema", "name", "verdict", "explanation", "keys", "stats", "exposures", "contradicted_grants", "params", "command", "started", "duration_s", "check_s", "events", "interrupted", "error"} {
		if !strings.Contains(doc, "| `"+field+"` |") {
			t.Errorf("docs/results.md has no row for %q", field)
		}
	}
	// Every field of contradicted_grants, and of its list's entries.
	sec = doc[strings.Index(doc, "## `contradicted_grants`"):]
	sec = sec[:strings.Index(sec[3:], "\n## ")+3]
	for _, v := range []any{models.Contradictions{}, models.ContradictionCounts{}, models.Contradiction{}} {
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name != "" && !strings.Contains(sec, "`"+name+"`") {
				t.Errorf("docs/results.md's contradicted_grants section does not name %s's field %q", typ.Name(), name)
			}
		}
	}
	_ = reports.ResultsSchema
}

// The repository stands on its own: no file points outside it or cites a
// document by a nickname instead of saying the idea.
func TestRepositoryStandsOnItsOwn(t *testing.T) {
	root := repoRoot(t)
	bad := regexp.MustCompile(`(?i)\.\./shared|design card|\bthe seed('s)? (describes|tells|story|anomaly|pause|scenario)|\bseed's (story|anomaly|pause|scenario)|seed-leases|SeedScenario`)
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel != "." && strings.HasPrefix(d.Name(), "."), d.Name() == "store", d.Name() == "bin", d.Name() == "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".tmpl", ".yml", ".yaml", ".sh", ".txt", "":
		default:
			return nil
		}
		if rel == filepath.Join("harness", "docs_test.go") {
			return nil // this file names what it looks for
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) > 4<<20 {
			return nil
		}
		seen++
		for i, line := range strings.Split(string(b), "\n") {
			if m := bad.FindString(line); m != "" {
				t.Errorf("%s:%d: %q — say the idea in the project's own words instead", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Errorf("only %d files read: is the walk rooted right?", seen)
	}
	if readme := readRepo(t, "README.md"); !strings.Contains(readme, "fencing token") || !strings.Contains(readme, "refuses any lower") {
		t.Error("README.md does not explain leases and fencing tokens itself")
	}
}
