package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/jsonerr"
	"github.com/fencecheck/fencecheck/runstore"
)

// ReadResults reads a results.json. It accepts any schema starting with
// "fencecheck/results/" and says so when the schema is another.
func ReadResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	res, err := parseResults(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// parseResults reads results.json's bytes; its errors say what is wrong in
// plain words (jsonerr), and the caller names the file.
func parseResults(b []byte) (*Results, error) {
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, errors.New(jsonerr.Message(b, err))
	}
	if len(res.Schema) < len(schemaPrefix) || res.Schema[:len(schemaPrefix)] != schemaPrefix {
		return nil, fmt.Errorf("schema %q is not a fencecheck results schema", res.Schema)
	}
	return &res, nil
}

const schemaPrefix = "fencecheck/results/"

// LoadRun reads a stored run directory back into a Run: the history
// (validated as docs/history.md says; a *history.ParseError names the bad
// line; a last line cut by a kill is dropped and HistoryNote says so)
// and whether it is a finished run's (Run.Unfinished), and, when the
// directory has a results.json, the run's name, parameters, command,
// start, duration, interrupt, incompleteness, error and servers'
// versions. The verdict
// is not read back: the caller checks the history again and sets Result.
func LoadRun(dir string) (*Run, error) {
	h, err := history.LoadFile(runstore.Run(dir).History())
	if err != nil {
		return nil, err
	}
	ops, faults := history.Pair(h.Events)
	r := &Run{Dir: dir, Events: h.Events, Ops: ops, Faults: faults, HistoryNote: h.Note(), Unfinished: h.Unfinished()}
	old, err := ReadResults(runstore.Run(dir).Results())
	switch {
	case err == nil:
		r.Name, r.Params, r.Command, r.CommandArgv = old.Name, old.Params, old.Command, old.CommandArgv
		r.Started, _ = time.Parse(runstore.TimeLayout, old.Started)
		r.Duration = time.Duration(old.DurationS * float64(time.Second))
		r.Interrupted, r.Incomplete, r.Error = old.Interrupted, old.Incomplete, old.Error
		r.Servers = old.Servers
		r.ExpiredGrants = old.ExpiredGrants
		r.EndedBy = old.EndedBy
		r.Agreement = old.Agreement
		r.Drops = old.PowerCuts.Drops()
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("%w (the run's own record is history.jsonl: move results.json away and check report rebuilds it from the history, without the old name, parameters and command)", err)
	}
	abs, _ := filepath.Abs(dir)
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	if r.Name == "" {
		r.Name = filepath.Base(filepath.Dir(abs))
	}
	if r.Started.IsZero() {
		if t, ok := runstore.ParseStamp(filepath.Base(abs)); ok {
			r.Started = t
		} else if st, err := os.Stat(runstore.Run(dir).History()); err == nil {
			r.Started = st.ModTime().Add(-time.Duration(r.End()))
		}
	}
	if r.Duration == 0 {
		r.Duration = time.Duration(r.End())
	}
	return r, nil
}
