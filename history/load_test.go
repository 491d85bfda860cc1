package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run killed while writing its last line leaves a history whose
// complete lines can still be checked: Load keeps them and says which
// line it dropped.
func TestLoadDropsAnIncompleteLastLine(t *testing.T) {
	lines := strings.SplitAfter(strings.TrimSuffix(example, "\n"), "\n")
	for name, body := range map[string]string{
		"cut mid-object":           example[:len(example)-20],
		"cut after a comma":        strings.Join(lines[:6], "") + `{"index":6,"time":2400,`,
		"cut then a newline":       example[:len(example)-20] + "\n",
		"cut then blank lines":     example[:len(example)-20] + "\n\n  \n",
		"cut one byte before end":  strings.TrimSuffix(example, "}\n"),
		"cut inside a string":      strings.Join(lines[:6], "") + `{"index":6,"time":2400,"process":"nem`,
		"cut right after the key":  strings.Join(lines[:6], "") + `{"index"`,
		"cut inside a nested list": strings.Join(lines[:6], "") + `{"index":6,"time":2400,"process":"nemesis","type":"info","f":"pause","value":["c3"`,
	} {
		h, err := Load(strings.NewReader(body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(h.Events) != 6 || h.Dropped != 7 {
			t.Errorf("%s: %d events, dropped line %d; want 6 events and line 7 dropped", name, len(h.Events), h.Dropped)
		}
		if n := h.Note(); !strings.Contains(n, "last line (line 7) was incomplete and was dropped") || !strings.Contains(n, "killed while writing it") {
			t.Errorf("%s: note %q", name, n)
		}
	}

	// Every complete history reads back whole, with no note.
	h, err := Load(strings.NewReader(example))
	if err != nil || len(h.Events) != 7 || h.Dropped != 0 || h.Note() != "" || h.Lines != 7 {
		t.Fatalf("a complete history: %+v, %v", h, err)
	}
	// The last line complete but without its newline is complete.
	h, err = Load(strings.NewReader(strings.TrimSuffix(example, "\n")))
	if err != nil || len(h.Events) != 7 || h.Dropped != 0 {
		t.Fatalf("no final newline: %+v, %v", h, err)
	}
}

// Only the last line may be cut: a broken line with complete lines after
// it was not cut by a crash, and is an error naming it.
func TestLoadRefusesABrokenLineInTheMiddle(t *testing.T) {
	lines := strings.SplitAfter(example, "\n")
	body := strings.Join(lines[:3], "") + lines[3][:20] + "\n" + strings.Join(lines[4:], "")
	_, err := Load(strings.NewReader(body))
	if err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("got %v, want an error naming line 4", err)
	}
	// A last line that is complete JSON but breaks a rule is no cut line.
	body = strings.Join(lines[:6], "") + `{"index":6,"time":2400,"process":"nemesis","type":"done","f":"pause"}`
	if _, err := Load(strings.NewReader(body)); err == nil || !strings.Contains(err.Error(), "line 7") {
		t.Fatalf("got %v, want an error naming line 7", err)
	}
	// The strict reader still refuses the cut line.
	if _, err := Parse(strings.NewReader(example[:len(example)-20])); err == nil || !strings.Contains(err.Error(), "line 7") {
		t.Fatalf("Parse: got %v", err)
	}
}

func TestLoadFileOfAnEmptyFile(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"empty": "", "blank": "\n  \n\n"} {
		path := filepath.Join(dir, name+".jsonl")
		os.WriteFile(path, []byte(body), 0o644)
		h, err := LoadFile(path)
		if err != nil || len(h.Events) != 0 || h.Lines != 0 || h.Dropped != 0 {
			t.Errorf("%s: %+v, %v", name, h, err)
		}
	}
}

// A field of the wrong JSON type is named with the line, the field and
// the type it must have, in words rather than Go's.
func TestWrongTypesNameTheFieldAndTheType(t *testing.T) {
	first := `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}` + "\n"
	cases := map[string]struct{ line, want string }{
		"token string":   {`{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","token":"7"}`, `line 2: field "token" must be a number, got a string`},
		"token negative": {`{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","token":-1}`, `line 2: field "token" must be a non-negative whole number, got -1`},
		"index fraction": {`{"index":1.5,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","token":1}`, `line 2: field "index" must be a whole number, got 1.5`},
		"time string":    {`{"index":1,"time":"2","process":0,"type":"ok","f":"acquire","key":"k0","token":1}`, `line 2: field "time" must be a number, got a string`},
		"key number":     {`{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":0,"token":1}`, `line 2: field "key" must be a string, got a number`},
		"type bool":      {`{"index":1,"time":2,"process":0,"type":true,"f":"acquire","key":"k0","token":1}`, `line 2: field "type" must be a string, got true or false`},
		"prev list":      {`{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","prev":[1]}`, `line 2: field "prev" must be a number, got a list`},
		"process bool":   {`{"index":1,"time":2,"process":true,"type":"ok","f":"acquire","key":"k0","token":1}`, `line 2: field "process" must be a non-negative whole number or "nemesis", got true`},
		"value string":   {`{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","value":"x"}`, `line 2: field "value" must be a number on a client's op, got "x"`},
		"not an object":  {`[1,2]`, `line 2: must be a JSON object, got a list`},
		"misspelt field": {`{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","tokn":1}`, `line 2: unknown field "tokn" (the fields are index, time, process, type, f, key, token, prev, value, error, call, return)`},
	}
	for name, c := range cases {
		_, err := Load(strings.NewReader(first + c.line + "\n"))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v\nwant %s", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "Go struct") {
			t.Errorf("%s: Go's own text: %v", name, err)
		}
	}
}

// FuzzLoad: no input makes Load panic; with nothing dropped it agrees with
// Parse, and what it keeps after a dropped line is a valid history.
func FuzzLoad(f *testing.F) {
	f.Add(example)
	f.Add(example[:len(example)-20])
	f.Add("\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Load(strings.NewReader(s))
		events, perr := Parse(strings.NewReader(s))
		if err != nil {
			if perr == nil {
				t.Fatalf("Load refused what Parse accepted: %v", err)
			}
			return
		}
		if h.Dropped == 0 && (perr != nil || len(events) != len(h.Events)) {
			t.Fatalf("nothing dropped, yet Parse says %v (%d events, Load %d)", perr, len(events), len(h.Events))
		}
		if h.Dropped != 0 && (h.Note() == "" || h.Lines == 0) {
			t.Fatalf("dropped line %d without a note", h.Dropped)
		}
	})
}
