package history

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/jsonerr"
)

// ParseError names the line of a history that is not what docs/history.md
// promises, and why.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// maxLine bounds one event's line; real events are under 300 bytes.
const maxLine = 1 << 20

var clientFs = map[string]bool{Acquire: true, Read: true, Write: true, Release: true}

// Parse reads and validates a whole history. It rejects, with the line
// number: malformed JSON (a truncated last line included), unknown types or
// client fs, a completion without its invoke, an invoke while the process
// has one pending or after it ended in info, indexes that are not strictly
// increasing, and times that go backwards. Load is the same for a history
// a run may have been killed while writing.
func Parse(r io.Reader) ([]Event, error) {
	var events []Event
	err := Scan(r, func(e Event) error {
		events = append(events, e)
		return nil
	})
	return events, err
}

// ParseFile is Parse on a file.
func ParseFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// History is a history read back by Load: the events of its complete
// lines, which line was dropped when the last one was cut short, and
// whether it is a finished run's (Unfinished).
type History struct {
	Events []Event
	// Lines counts the lines that were not blank, the dropped one
	// included; 0 means the file was empty.
	Lines int
	// Dropped is the number of the last line when it was not a complete
	// JSON object and was left out (the run was killed while writing it);
	// 0 when every line was complete. A caller must say so: Note.
	Dropped int
	// Ended: the history's last line is the end event a finished run
	// writes after its final reads (docs/history.md).
	Ended bool
	// Open are the client invokes left without a completion at the end,
	// in history order: a finished run completes every op it starts.
	Open []Event
}

// Note says what Load left out, or "" when nothing was.
func (h *History) Note() string {
	if h.Dropped == 0 {
		return ""
	}
	return fmt.Sprintf("the last line (line %d) was incomplete and was dropped: the run was probably killed while writing it", h.Dropped)
}

// Unfinished says why the history is not the whole record of a finished
// run, or "" when it is: its last line was cut short, it has no end
// event (its run was killed, crashed or interrupted before the end of its
// final reads — or an older fencecheck, which wrote none, recorded it),
// or client ops are still open at its end. A history that is not
// finished may still show a violation, but it is never valid: what the
// run did next, and the final reads that pin the storage's state, are
// not in it.
func (h *History) Unfinished() string {
	var why []string
	if h.Dropped != 0 {
		why = append(why, fmt.Sprintf("its last line (line %d) was cut short: the run was killed while writing it", h.Dropped))
	}
	if !h.Ended {
		why = append(why, "it has no end event (a run killed, crashed or interrupted before the end of its final reads writes none, nor did a fencecheck older than the end event)")
	}
	if n := len(h.Open); n > 0 {
		o := h.Open[0]
		op := "op"
		if n > 1 {
			op = "ops"
		}
		why = append(why, fmt.Sprintf("%d client %s still open at its end (the first: process %d's %s on %s, index %d)", n, op, o.Process, o.F, o.Key, o.Index))
	}
	if len(why) == 0 {
		return ""
	}
	return "the history is not a finished run's: " + strings.Join(why, "; ")
}

// Load reads and validates a history as Parse does, except that a last
// line that is not complete JSON — a run killed while writing it, with or
// without its newline — is dropped, and History.Dropped names it; the
// complete lines before it are checked as usual. A malformed line with
// complete lines after it was not cut by a crash and is an error.
func Load(r io.Reader) (*History, error) {
	var events []Event
	h, err := LoadEach(r, func(e Event) error {
		events = append(events, e)
		return nil
	})
	h.Events = events
	return h, err
}

// LoadEach is Load that hands each event to fn as it is read instead of
// keeping it (History.Events stays empty), so a caller can stream a large
// history that a kill may have cut.
func LoadEach(r io.Reader, fn func(Event) error) (*History, error) {
	h := &History{}
	err := scan(r, true, h, fn)
	return h, err
}

// LoadFile is Load on a file.
func LoadFile(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Load(f)
}

// Scan validates a history like Parse and hands each event to fn as it
// goes, so a caller can stream a large history.
func Scan(r io.Reader, fn func(Event) error) error {
	return scan(r, false, &History{}, fn)
}

// scan is Scan, filling in h's counts; with lenient, a last line that is
// not complete JSON is held back rather than refused, and its number set
// as h.Dropped. The end event is checked (nothing may follow it) and
// recorded in h.Ended, not handed to fn.
func scan(r io.Reader, lenient bool, h *History, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	v := NewValidator()
	line, endLine := 0, 0
	var cut *ParseError // a line that is not complete JSON, refused unless it is the last
	defer func() { h.Open = v.Pending() }()
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		h.Lines++
		if cut != nil {
			return cut
		}
		if endLine != 0 {
			return &ParseError{line, fmt.Sprintf("an event after the end event (line %d): the end event is the last line of a history", endLine)}
		}
		var e Event
		if !decodeFast(b, &e) {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil {
				var se *json.SyntaxError
				if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
					cut = &ParseError{line, "not a complete JSON object (truncated or malformed): " + err.Error()}
					if !lenient {
						return cut
					}
					continue
				}
				return &ParseError{line, decodeMessage(err)}
			}
		}
		if e.Type == End {
			if err := v.CheckEnd(e); err != nil {
				return &ParseError{line, err.Error()}
			}
			endLine = line
			h.Ended = true
			continue
		}
		if err := v.Check(e); err != nil {
			return &ParseError{line, err.Error()}
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &ParseError{line + 1, fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return err
	}
	if cut != nil {
		h.Dropped = cut.Line
	}
	return nil
}

// decodeMessage says what is wrong with a line that is JSON but not an
// event, naming the field and the type it must have rather than Go's
// (internal/jsonerr, as for every JSON a user hands fencecheck), and for an
// unknown field the fields an event has.
func decodeMessage(err error) string {
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + f + " (the fields are index, time, process, type, f, key, token, prev, value, error, call, return)"
	}
	return jsonerr.Message(nil, err)
}

// Validator checks that a stream of events keeps the history's rules. The
// harness and the agent protocol use it too, so every reader agrees.
type Validator struct {
	lastIndex int64
	lastTime  int64
	first     bool
	pending   map[int]Event
	retired   map[int]bool
}

// NewValidator starts an empty history.
func NewValidator() *Validator {
	return &Validator{first: true, pending: map[int]Event{}, retired: map[int]bool{}}
}

// CheckEnd accepts the end event e, or says which rule it breaks: it
// follows the events before it in index and time, as any event does.
func (v *Validator) CheckEnd(e Event) error {
	if e.Index < 0 || e.Time < 0 {
		return fmt.Errorf("index and time must not be negative")
	}
	if !v.first && e.Index <= v.lastIndex {
		return fmt.Errorf("end event: index %d is not greater than the previous index %d", e.Index, v.lastIndex)
	}
	if !v.first && e.Time < v.lastTime {
		return fmt.Errorf("end event: time %d goes backwards (previous event at %d)", e.Time, v.lastTime)
	}
	return nil
}

// Pending are the client invokes still waiting for their completion, in
// history order.
func (v *Validator) Pending() []Event {
	out := make([]Event, 0, len(v.pending))
	for _, e := range v.pending {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Event) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// Check accepts e or says which rule it breaks.
func (v *Validator) Check(e Event) error {
	if !v.first {
		if e.Index <= v.lastIndex {
			return fmt.Errorf("index %d is not greater than the previous index %d (duplicate or out of order)", e.Index, v.lastIndex)
		}
		if e.Time < v.lastTime {
			return fmt.Errorf("time %d goes backwards (previous event at %d)", e.Time, v.lastTime)
		}
	}
	if e.Index < 0 || e.Time < 0 {
		return fmt.Errorf("index and time must not be negative")
	}
	switch e.Type {
	case Invoke, OK, Fail, Info:
	case End:
		return fmt.Errorf("an end event here: it is the last line of a finished run's history, not an op")
	default:
		return fmt.Errorf("unknown type %q (want invoke, ok, fail or info; end on the last line)", e.Type)
	}
	if e.F == "" {
		return fmt.Errorf("missing field \"f\"")
	}
	if (e.Call < 0 || e.Return < 0) || ((e.Call != 0 || e.Return != 0) && (e.Type == Invoke || e.IsNemesis())) {
		return fmt.Errorf("call and return belong on a client's completion, as non-negative times")
	}
	if !e.IsNemesis() {
		if !clientFs[e.F] {
			return fmt.Errorf("unknown f %q for a client (want acquire, read, write or release)", e.F)
		}
		if e.Key == "" {
			return fmt.Errorf("client op %s has no key", e.F)
		}
		if e.F == Write && e.Type == Invoke && (e.Prev == nil || e.Value == nil) {
			return fmt.Errorf("write invoke needs prev and value")
		}
		if e.Type == Invoke {
			if v.retired[e.Process] {
				return fmt.Errorf("process %d invokes after its op ended in info (it must take a new process id)", e.Process)
			}
			if p, ok := v.pending[e.Process]; ok {
				return fmt.Errorf("process %d invokes %s while its %s (index %d) is still pending", e.Process, e.F, p.F, p.Index)
			}
			v.pending[e.Process] = e
		} else {
			p, ok := v.pending[e.Process]
			if !ok {
				return fmt.Errorf("%s completion of %s by process %d has no pending invoke", e.Type, e.F, e.Process)
			}
			if p.F != e.F || p.Key != e.Key {
				return fmt.Errorf("completion %s %s on %q does not match the pending invoke %s on %q (index %d)", e.Type, e.F, e.Key, p.F, p.Key, p.Index)
			}
			if e.Call != 0 && (e.Call < p.Time || e.Call > e.Time) {
				return fmt.Errorf("call %d of %s by process %d lies outside its invoke (%d) and completion (%d)", e.Call, e.F, e.Process, p.Time, e.Time)
			}
			if e.Return != 0 {
				if e.Type == Info {
					return fmt.Errorf("an info completion has no return (the op may still take effect)")
				}
				if e.Return < max(e.Call, p.Time) || e.Return > e.Time {
					return fmt.Errorf("return %d of %s by process %d lies outside its call (%d) and completion (%d)", e.Return, e.F, e.Process, max(e.Call, p.Time), e.Time)
				}
			}
			delete(v.pending, e.Process)
			if e.Type == Info {
				v.retired[e.Process] = true
			}
		}
	}
	v.first = false
	v.lastIndex = e.Index
	v.lastTime = e.Time
	return nil
}
