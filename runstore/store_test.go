package runstore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewRunMakesOneDirectoryPerRunAndPointsLatestAtIt(t *testing.T) {
	root := t.TempDir()
	started := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.FixedZone("x", 3600))
	first, err := NewRun(root, "etcd-nightly", started)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "etcd-nightly", "20260102T020405.006Z"); first != Run(want) {
		t.Errorf("first run in %s, want %s (UTC, to the millisecond)", first, want)
	}
	// Another run in the same millisecond gets a directory of its own.
	second, err := NewRun(root, "etcd-nightly", started)
	if err != nil {
		t.Fatal(err)
	}
	if want := first + "-2"; second != want {
		t.Errorf("second run in %s, want %s", second, want)
	}
	latest, err := filepath.EvalSymlinks(filepath.Join(root, Latest))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(string(second))
	if latest != want {
		t.Errorf("latest points at %s, want the newest run %s", latest, want)
	}
	// The link is relative, so a moved store still works.
	if target, _ := os.Readlink(filepath.Join(root, Latest)); filepath.IsAbs(target) {
		t.Errorf("latest is absolute: %s", target)
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, "*.tmp"))
	if len(leftovers) != 0 {
		t.Errorf("temporary links left behind: %v", leftovers)
	}
}

func TestNewRunSaysWhatToDoWhenTheStoreCannotBeMade(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewRun(file, "t", time.Now())
	if err == nil || !strings.Contains(err.Error(), "--store") {
		t.Errorf("want an error naming --store, got %v", err)
	}
}

func TestParseStampReadsTheStampWithOrWithoutItsSuffix(t *testing.T) {
	want := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	for _, name := range []string{"20260102T030405.006Z", "20260102T030405.006Z-2", "20260102T030405.006Z-13"} {
		got, ok := ParseStamp(name)
		if !ok || !got.Equal(want) {
			t.Errorf("ParseStamp(%q) = %s, %v; want %s", name, got, ok, want)
		}
	}
	if Stamp(want) != "20260102T030405.006Z" {
		t.Errorf("Stamp = %s", Stamp(want))
	}
	for _, name := range []string{"latest", "", "2026-01-02"} {
		if _, ok := ParseStamp(name); ok {
			t.Errorf("ParseStamp(%q) accepted", name)
		}
	}
}

func TestCompareDirIsUnderTheStoresCompareDirectory(t *testing.T) {
	got := CompareDir("store", time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC))
	if want := filepath.Join("store", "compare", "20260102T030405Z"); got != want {
		t.Errorf("CompareDir = %s, want %s", got, want)
	}
}

func TestListFindsRunDirectoriesWithTheirFilesAndNoLinks(t *testing.T) {
	root := t.TempDir()
	write := func(rel string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/20260102T030405.000Z/" + HistoryFile)
	write("a/20260102T030405.000Z/" + ResultsFile)
	write("a/20260102T030405.000Z/" + LogFile)
	write("a/20260102T030405.000Z/unrelated.txt")
	write("b/not-a-stamp/" + ReportFile)
	write("b/empty/unrelated.txt") // no run file: not a run
	write("loose-file")
	if err := os.Mkdir(filepath.Join(root, "b", "nothing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("a", "20260102T030405.000Z"), filepath.Join(root, Latest)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("20260102T030405.000Z", filepath.Join(root, "a", "again")); err != nil {
		t.Fatal(err)
	}
	runs, err := List(os.DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range runs {
		paths = append(paths, r.Path)
	}
	slices.Sort(paths)
	if want := []string{"a/20260102T030405.000Z", "b/not-a-stamp"}; !slices.Equal(paths, want) {
		t.Fatalf("listed %v, want %v", paths, want)
	}
	for _, r := range runs {
		switch r.Path {
		case "a/20260102T030405.000Z":
			if r.Test != "a" || r.Stamp != "20260102T030405.000Z" {
				t.Errorf("test %q stamp %q", r.Test, r.Stamp)
			}
			if !r.Started.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
				t.Errorf("started %s", r.Started)
			}
			// In RunFiles' order, only the run's own files.
			if want := []string{ResultsFile, HistoryFile, LogFile}; !slices.Equal(r.Files, want) {
				t.Errorf("files %v, want %v", r.Files, want)
			}
		case "b/not-a-stamp":
			if !r.Started.IsZero() {
				t.Errorf("a name that is not a stamp gave a start: %s", r.Started)
			}
		}
	}
}

// A run's files and a comparison's tables are named by runstore alone:
// each method gives the documented file in its directory.
func TestRunAndComparisonNameTheirFiles(t *testing.T) {
	r := Run(filepath.Join("store", "t", "20260102T020405.006Z"))
	for got, want := range map[string]string{
		r.History(): "history.jsonl", r.Results(): "results.json", r.Log(): "check.log", r.Report(): "report.html",
		r.Visualization(): "linearizability.html", r.KeyVisualizations(): "linearizability",
		r.KeyVisualization("k0"): filepath.Join("linearizability", "k0.html"), r.Logs(): "logs",
		r.AgentsLog(): filepath.Join("logs", "agents.log"), r.File(ReportFile): "report.html",
	} {
		if want = filepath.Join(string(r), want); got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
	c := Comparison(filepath.Join("store", "compare", "20260102T020405Z"))
	if c.JSON() != filepath.Join(string(c), "compare.json") || c.Markdown() != filepath.Join(string(c), "compare.md") || c.HTML() != filepath.Join(string(c), "compare.html") {
		t.Errorf("a comparison's tables: %s, %s, %s", c.JSON(), c.Markdown(), c.HTML())
	}
	if got, want := c.Run("etcd/20260102T020405.006Z").History(), filepath.Join(string(c), "etcd", "20260102T020405.006Z", "history.jsonl"); got != want {
		t.Errorf("a comparison's run's history at %s, want %s", got, want)
	}
	if got := Rebase("../shard-1", "etcd/x"); got != "../shard-1/etcd/x" {
		t.Errorf("a shard's run from its merge: %s, want ../shard-1/etcd/x", got)
	}
	d := RunDir{Path: "t/20260102T020405.006Z"}
	if d.History() != "t/20260102T020405.006Z/history.jsonl" || d.Results() != "t/20260102T020405.006Z/results.json" {
		t.Errorf("a listed run's files in the store's file system: %s, %s", d.History(), d.Results())
	}
}
