package history

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const endLine = `{"index":7,"time":2500,"type":"end"}` + "\n"

// A finished run's history ends with the end event: Load reads it as
// finished, hands on only the events before it, and says nothing is
// missing. Every way a history can fall short of that is named.
func TestTheEndEventTellsAFinishedHistory(t *testing.T) {
	h, err := Load(strings.NewReader(example + endLine))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Ended || len(h.Events) != 7 || len(h.Open) != 0 || h.Unfinished() != "" || h.Lines != 8 {
		t.Fatalf("a finished history: ended %v, %d events, open %v, unfinished %q", h.Ended, len(h.Events), h.Open, h.Unfinished())
	}
	events, err := Parse(strings.NewReader(example + endLine))
	if err != nil || len(events) != 7 {
		t.Fatalf("Parse: %d events, %v", len(events), err)
	}

	for name, c := range map[string]struct{ body, want string }{
		"no end event":       {example, "it has no end event"},
		"an empty file":      {"", "it has no end event"},
		"the end line cut":   {example + endLine[:20], "its last line (line 8) was cut short"},
		"an op still open":   {example + `{"index":7,"time":2450,"process":4,"type":"invoke","f":"acquire","key":"k1"}` + "\n" + `{"index":8,"time":2500,"type":"end"}` + "\n", "1 client op still open at its end (the first: process 4's acquire on k1, index 7)"},
		"cut and unfinished": {example + `{"index":7,"time":2450,"process":4,"type":"invoke","f":"acq`, "its last line (line 8) was cut short"},
	} {
		h, err := Load(strings.NewReader(c.body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if why := h.Unfinished(); !strings.Contains(why, c.want) || !strings.HasPrefix(why, "the history is not a finished run's: ") {
			t.Errorf("%s: unfinished %q, want it to say %q", name, why, c.want)
		}
	}
}

// The end event is the last line, with index, time and type only, in
// order with the events before it; anything else is refused by line.
func TestTheEndEventIsCheckedLikeAnyLine(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"an event after it":   {example + endLine + `{"index":8,"time":2600,"process":"nemesis","type":"info","f":"pause"}` + "\n", "line 9: an event after the end event (line 8)"},
		"two ends":            {example + endLine + `{"index":8,"time":2600,"type":"end"}` + "\n", "line 9: an event after the end event"},
		"a field too many":    {example + `{"index":7,"time":2500,"type":"end","process":1}` + "\n", "line 8: an end event has index, time and type only"},
		"an index going back": {example + `{"index":6,"time":2500,"type":"end"}` + "\n", "line 8: end event: index 6 is not greater"},
		"time going back":     {example + `{"index":7,"time":100,"type":"end"}` + "\n", "line 8: end event: time 100 goes backwards"},
	} {
		if _, err := Load(strings.NewReader(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
		if _, err := Parse(strings.NewReader(c.body)); err == nil {
			t.Errorf("%s: Parse accepted it", name)
		}
	}
	// The validator the live check and the agents use refuses it as an op.
	if err := NewValidator().Check(Event{Type: End}); err == nil || !strings.Contains(err.Error(), "not an op") {
		t.Errorf("Validator.Check(end) = %v", err)
	}
}

// The recorder writes the end event last, in the documented shape;
// nothing recorded after it reaches the file, and the mistake is an
// error rather than a history that reads as finished.
func TestRecorderEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(f)
	var seen []Event
	rec.Observe(func(e Event) { seen = append(seen, e) })
	rec.Record(Event{Process: 0, Type: Invoke, F: Acquire, Key: "k0"})
	rec.Record(Event{Process: 0, Type: OK, F: Acquire, Key: "k0", Token: 1})
	if err := rec.End(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Errorf("observers saw %d events, want the 2 ops (the end is no op)", len(seen))
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, `{"index":2,"time":`) || !strings.HasSuffix(last, `,"type":"end"}`) {
		t.Errorf("last line %q, want the end event", last)
	}
	h, err := LoadFile(path)
	if err != nil || !h.Ended || h.Unfinished() != "" || len(h.Events) != 2 {
		t.Fatalf("read back: %+v, %v", h, err)
	}
	rec.Record(Event{Process: 0, Type: Invoke, F: Read, Key: "k0", Token: 1})
	if err := rec.Err(); err == nil || !strings.Contains(err.Error(), "after the end event") {
		t.Errorf("Err after a late event = %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Errorf("an event recorded after the end reached the file")
	}
	f.Close()
}

// Ended reads only the last line: the end event there, complete, is a
// finished history; a cut one, or none, is not.
func TestEndedReadsTheLastLine(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		body string
		want bool
	}{
		"finished":             {example + endLine, true},
		"no final newline":     {example + strings.TrimSuffix(endLine, "\n"), true},
		"blank lines after it": {example + endLine + "\n\n", true},
		"no end":               {example, false},
		"the end cut":          {example + endLine[:len(endLine)-3], false},
		"empty":                {"", false},
		"a long history":       {strings.Repeat(`{"index":0,"time":0,"process":"nemesis","type":"info","f":"pause"}`+"\n", 3000) + endLine, true},
	} {
		if err := os.WriteFile(filepath.Join(dir, "h"), []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Ended(os.DirFS(dir), "h")
		if err != nil || got != c.want {
			t.Errorf("%s: Ended = %v, %v; want %v", name, got, err, c.want)
		}
	}
	if _, err := Ended(os.DirFS(dir), "missing"); err == nil {
		t.Error("a missing history: no error")
	}
}
