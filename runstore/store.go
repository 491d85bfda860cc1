// Package runstore owns where a run lives on disk: the layout
// <store>/<test>/<stamp>/, how a stamp is written and read, the
// <store>/latest link to the newest run, the names of the files and the
// logs directory a run keeps, where a comparison puts its tables and what
// they are called, and finding the runs of a store again. Everything that
// makes, names or lists a run directory or a file in it asks this package
// (a Run's methods name each file of a run, a Comparison's each table):
// nothing else spells a name on disk or joins one to a store's path.
// WriteFile is how a file of the store is written: whole or not at all.
//
// It must never decide what a file says: it does not check a history,
// judge a verdict or format a report (the harness, models and reports do),
// and it never writes outside the store directory it is given. Listing
// reads only names and file types, never contents, and never follows a
// symbolic link.
package runstore

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// DefaultRoot is the store directory when none is given (--store).
const DefaultRoot = "store"

// Latest is the link in the store that points at the newest run; no test
// may take its name.
const Latest = "latest"

// The files of a run directory.
const (
	// HistoryFile is the history, one event a line (docs/history.md).
	HistoryFile = "history.jsonl"
	// ResultsFile is the machine-readable verdict (docs/results.md).
	ResultsFile = "results.json"
	// LogFile is the run's full log.
	LogFile = "check.log"
	// ReportFile is the HTML report.
	ReportFile = "report.html"
	// VisualizationFile is porcupine's visualization of one key;
	// VisualizationDir holds one per key when there are several.
	VisualizationFile = "linearizability.html"
	VisualizationDir  = "linearizability"
)

// RunFiles are the files of a run that an index links to, in order.
var RunFiles = []string{ReportFile, ResultsFile, HistoryFile, VisualizationFile, LogFile}

// StampLayout is how a run directory is named from the run's start (UTC,
// to the millisecond). A run that starts in the same millisecond as
// another of the same test gets the stamp followed by -2, -3, ...
const StampLayout = "20060102T150405.000Z"

// TimeLayout is how a run's start is written in its files (results.json's
// "started").
const TimeLayout = "2006-01-02T15:04:05.000Z"

// A run's logs: LogsDir in the run directory holds each server's log and
// AgentsLog, what the client agents wrote to stderr (a panic, a Go runtime
// error, a client's own logs).
const (
	LogsDir   = "logs"
	AgentsLog = "agents.log"
)

// The files a comparison keeps in its directory: the matrix as data
// (docs/compare.md; also a shard's part, which a merge reads back), as a
// Markdown table and as a page.
const (
	CompareJSON     = "compare.json"
	CompareMarkdown = "compare.md"
	CompareHTML     = "compare.html"
	// CompareExpect is the comparison's cells as `check compare --expect`
	// reads them: each cell's verdict, to pin the matrix with.
	CompareExpect = "compare.expect"
)

// compareStampLayout names a comparison's directory (to the second).
const compareStampLayout = "20060102T150405Z"

// Stamp is the name of the directory of a run started at t.
func Stamp(t time.Time) string { return t.UTC().Format(StampLayout) }

// ParseStamp reads the start of a run from its directory's name, with or
// without the -N that tells apart runs started in the same millisecond.
func ParseStamp(name string) (time.Time, bool) {
	t, err := time.Parse(StampLayout, strings.SplitN(name, "-", 2)[0])
	return t, err == nil
}

// NewRun makes <root>/<test>/<stamp>/ for a run started at started — a
// new directory even when another run of the test started in the same
// millisecond — points <root>/latest at it, and returns it.
func NewRun(root, test string, started time.Time) (Run, error) {
	parent := TestDir(root, test)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("creating the store directory: %w (choose another with --store)", err)
	}
	stamp := Stamp(started)
	var rel string
	for i := 1; ; i++ {
		rel = filepath.Join(test, stamp)
		if i > 1 {
			rel += fmt.Sprintf("-%d", i)
		}
		err := os.Mkdir(filepath.Join(root, rel), 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) || i > 1000 {
			return "", fmt.Errorf("creating the run directory: %w (choose another with --store)", err)
		}
	}
	setLatest(root, rel)
	return Run(filepath.Join(root, rel)), nil
}

// TestDir is where the runs of a test are kept: <root>/<test>.
func TestDir(root, test string) string { return filepath.Join(root, test) }

// setLatest points <root>/latest at rel, replacing the old link in one
// step. A store where links cannot be made still works without it.
func setLatest(root, rel string) {
	latest := filepath.Join(root, Latest)
	tmp := fmt.Sprintf("%s.%d.tmp", latest, os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err == nil {
		if err := os.Rename(tmp, latest); err != nil {
			os.Remove(tmp)
		}
	}
}

// CompareDir is where a comparison started at t keeps its tables and its
// runs when no directory is given: <root>/compare/<stamp>.
func CompareDir(root string, t time.Time) string {
	return filepath.Join(root, "compare", t.UTC().Format(compareStampLayout))
}

// Comparison is a comparison's directory on disk (CompareDir, --store or
// a merge's --out): its methods name its tables and its runs.
type Comparison string

// JSON is the matrix as data (CompareJSON).
func (c Comparison) JSON() string { return filepath.Join(string(c), CompareJSON) }

// Markdown is the matrix as a Markdown table (CompareMarkdown).
func (c Comparison) Markdown() string { return filepath.Join(string(c), CompareMarkdown) }

// HTML is the matrix as a page (CompareHTML).
func (c Comparison) HTML() string { return filepath.Join(string(c), CompareHTML) }

// Expect is the comparison's cells as an --expect file.
func (c Comparison) Expect() string { return filepath.Join(string(c), CompareExpect) }

// Run is the directory of one of the comparison's runs, from the path
// compare.json records for it: relative to the comparison, with slashes.
func (c Comparison) Run(rel string) Run {
	return Run(filepath.Join(string(c), filepath.FromSlash(rel)))
}

// Rebase is the path, with slashes, of a run recorded as rel in a
// comparison that is itself at from relative to another comparison (a
// shard's runs as its merge links them).
func Rebase(from, rel string) string {
	return filepath.ToSlash(filepath.Join(from, filepath.FromSlash(rel)))
}

// Run is one run's directory on disk: the one NewRun made, or one given
// on the command line. Its methods name every file the run keeps, so
// that nothing outside this package joins a run's file names.
type Run string

// History is the run's history (HistoryFile).
func (r Run) History() string { return r.File(HistoryFile) }

// Results is the run's machine-readable verdict (ResultsFile).
func (r Run) Results() string { return r.File(ResultsFile) }

// Log is the run's full log (LogFile).
func (r Run) Log() string { return r.File(LogFile) }

// Report is the run's HTML report (ReportFile).
func (r Run) Report() string { return r.File(ReportFile) }

// Visualization is porcupine's visualization of the run's one key, or of
// the key that stands for them all (VisualizationFile).
func (r Run) Visualization() string { return r.File(VisualizationFile) }

// KeyVisualizations is the directory of one visualization per key, when
// the run has several keys (VisualizationDir).
func (r Run) KeyVisualizations() string { return r.File(VisualizationDir) }

// KeyVisualization is the visualization of one key, named by name (a
// key made safe as a file name) in KeyVisualizations.
func (r Run) KeyVisualization(name string) string {
	return filepath.Join(r.KeyVisualizations(), name+".html")
}

// Logs is the directory of the servers' logs and AgentsLog (LogsDir).
func (r Run) Logs() string { return r.File(LogsDir) }

// AgentsLog is what the client agents wrote to stderr.
func (r Run) AgentsLog() string { return filepath.Join(r.Logs(), AgentsLog) }

// MakeLogs makes the logs directory if it is not there yet.
func (r Run) MakeLogs() error { return os.MkdirAll(r.Logs(), 0o755) }

// File is the path of the run's file named name, one of RunFiles.
func (r Run) File(name string) string { return filepath.Join(string(r), name) }

// RunDir is a run directory found in a store.
type RunDir struct {
	// Test is the test's name (the store's first level), Stamp the run's
	// directory (the second); Path is Test/Stamp, with slashes.
	Test, Stamp, Path string
	// Started is read from the stamp (zero when the name is not one).
	Started time.Time
	// Files lists which of RunFiles the directory holds, in their order.
	Files []string
}

// List finds every run directory of a store — <test>/<stamp>/ holding at
// least one of RunFiles — in no particular order. Symbolic links (latest)
// are not followed, so no run is listed twice and nothing outside the
// store is read.
func List(root fs.FS) ([]RunDir, error) {
	tests, err := fs.ReadDir(root, ".")
	if err != nil {
		return nil, err
	}
	var out []RunDir
	for _, t := range tests {
		if !t.IsDir() || t.Type()&fs.ModeSymlink != 0 {
			continue
		}
		stamps, err := fs.ReadDir(root, t.Name())
		if err != nil {
			continue
		}
		for _, s := range stamps {
			if !s.IsDir() || s.Type()&fs.ModeSymlink != 0 {
				continue
			}
			d := RunDir{Test: t.Name(), Stamp: s.Name(), Path: path.Join(t.Name(), s.Name())}
			for _, f := range RunFiles {
				if st, err := fs.Stat(root, path.Join(d.Path, f)); err == nil && st.Mode().IsRegular() {
					d.Files = append(d.Files, f)
				}
			}
			if len(d.Files) == 0 {
				continue
			}
			d.Started, _ = ParseStamp(d.Stamp)
			out = append(out, d)
		}
	}
	return out, nil
}

// History is the path of the run's history in the store's file system
// (with slashes, as fs.FS wants).
func (d RunDir) History() string { return path.Join(d.Path, HistoryFile) }

// Results is the path of the run's results.json in the store's file
// system.
func (d RunDir) Results() string { return path.Join(d.Path, ResultsFile) }

// WriteFile writes path whole or not at all: fill writes a temporary
// file beside it, which then replaces path in one rename. A reader — a
// person, CI, `check serve` — sees the old file or the new one, never
// half of one, and a write that fails (a full disk) leaves the old file
// as it was.
func WriteFile(path string, fill func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = fill(f)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}
