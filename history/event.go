// Package history is the record of a test: the events clients and the
// nemesis produced, in real-time order, as JSON Lines (docs/history.md).
//
// It is a package of its own because it is the contract between all the
// others: the harness writes it, the models check it, the
// reports draw it and `check analyze` reads it back. It also owns the few
// rules every reader of a history must share: when an op ended (Op.Ended)
// and how a history time is printed (Seconds). It must never depend on
// any of those packages, and it knows nothing about locks beyond the names of
// the operations. The words a completion's error is read for ("fenced",
// "lease-lost") and the monotonic clock a client's readings are taken on
// are the client protocol's (lockclient), whose answers a history records.
package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Type is Jepsen's op type: an invocation or one of its three completions.
type Type string

const (
	Invoke Type = "invoke"
	// OK means the operation certainly happened.
	OK Type = "ok"
	// Fail means the operation certainly did not happen.
	Fail Type = "fail"
	// Info means the outcome is unknown: a timeout, a crash, a lost connection.
	Info Type = "info"
	// End is the last line of a finished run's history, written after the
	// final reads: {"index":N,"time":T,"type":"end"}. A history without it
	// did not finish (its run was killed, crashed or interrupted), and no
	// reader calls it valid. It is no op: readers check it and hand on
	// only the events before it (History.Ended says it was there).
	End Type = "end"
)

// Client operation names.
const (
	Acquire = "acquire"
	Read    = "read"
	Write   = "write"
	Release = "release"
)

// ErrGuardFailed is the error a fail carries when a resource kept in the
// lock service itself (--storage etcd) refused a write or read whose
// guard — "the lock is still mine" — no longer held: the lock service's
// own fence. Unlike lockclient.ErrorFenced it carries no token comparison, so the
// model does not place it; it counts as a refusal wherever refusals of
// late ops are counted.
const ErrGuardFailed = "guard-failed"

// OpenFailed begins the error of an acquire that failed because its
// process's client could not open: a replacement process started while
// the service was down (docs/client-protocol.md). Nothing was sent to the
// lock service; the summary counts these as failed opens.
const OpenFailed = "open-failed"

// NothingToHit is the error of a fault's lone info when its start found
// nothing to act on (no leader, no holder): no fault was applied, and
// none failed.
const NothingToHit = "nothing to hit"

// NemesisProcess is the process name of fault events.
const NemesisProcess = -1

// Event is one line of a history.
type Event struct {
	Index   int64  `json:"index"`
	Time    int64  `json:"time"` // nanoseconds since the test started, monotonic
	Process int    `json:"-"`    // client process id; NemesisProcess for faults
	Type    Type   `json:"type"`
	F       string `json:"f"`
	Key     string `json:"key,omitempty"`
	// Token is the fencing token the op carried (acquire: the one it got).
	Token uint64 `json:"token,omitempty"`
	// Prev is the value a write believes it replaces.
	Prev *int64 `json:"prev,omitempty"`
	// Value is what a read returned or a write stored.
	Value *int64 `json:"-"`
	// Nodes are the targets of a nemesis event.
	Nodes []string `json:"-"`
	Error string   `json:"error,omitempty"`
	// Call and Return, on a completion, are the client's own readings of
	// when it issued the op and when the answer came back, on the test's
	// clock (0: not known). A client in another process reads them
	// without the transport between it and the harness, so they narrow
	// the op's interval to [max(invoke time, Call), Return]; the harness
	// records them only when it has checked that the client's clock is
	// its own. Return is absent on info: the op may still take effect.
	Call   int64 `json:"-"`
	Return int64 `json:"-"`
}

// IsNemesis reports whether the event belongs to the fault injector.
func (e *Event) IsNemesis() bool { return e.Process == NemesisProcess }

// wireEvent is the JSON shape: process is an integer or "nemesis", value is an
// integer for clients and a list of node names for the nemesis.
type wireEvent struct {
	Index   int64           `json:"index"`
	Time    int64           `json:"time"`
	Process json.RawMessage `json:"process"`
	Type    Type            `json:"type"`
	F       string          `json:"f"`
	Key     string          `json:"key,omitempty"`
	Token   *uint64         `json:"token,omitempty"`
	Prev    *int64          `json:"prev,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Error   string          `json:"error,omitempty"`
	Call    int64           `json:"call,omitempty"`
	Return  int64           `json:"return,omitempty"`
}

// MarshalJSON writes the documented wire shape.
func (e Event) MarshalJSON() ([]byte, error) {
	if e.Type == End {
		return []byte(`{"index":` + strconv.FormatInt(e.Index, 10) + `,"time":` + strconv.FormatInt(e.Time, 10) + `,"type":"end"}`), nil
	}
	w := wireEvent{Index: e.Index, Time: e.Time, Type: e.Type, F: e.F, Key: e.Key, Prev: e.Prev, Error: e.Error, Call: e.Call, Return: e.Return}
	if e.IsNemesis() {
		w.Process = json.RawMessage(`"nemesis"`)
		if e.Nodes != nil {
			b, err := json.Marshal(e.Nodes)
			if err != nil {
				return nil, err
			}
			w.Value = b
		}
	} else {
		w.Process = json.RawMessage(strconv.Itoa(e.Process))
		if e.Value != nil {
			w.Value = json.RawMessage(strconv.FormatInt(*e.Value, 10))
		}
		if e.Token != 0 || e.F == Read || e.F == Write || (e.F == Acquire && e.Type == OK) {
			t := e.Token
			w.Token = &t
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the wire shape. It checks the shape of fields only;
// Validate checks the meaning.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wireEvent
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt field must not pass as absent
	if err := dec.Decode(&w); err != nil {
		return err
	}
	*e = Event{Index: w.Index, Time: w.Time, Type: w.Type, F: w.F, Key: w.Key, Prev: w.Prev, Error: w.Error, Call: w.Call, Return: w.Return}
	if w.Type == End {
		if len(w.Process) > 0 || w.F != "" || w.Key != "" || w.Token != nil || w.Prev != nil || len(w.Value) > 0 || w.Error != "" || w.Call != 0 || w.Return != 0 {
			return fmt.Errorf("an end event has index, time and type only")
		}
		return nil
	}
	if w.Token != nil {
		e.Token = *w.Token
	}
	switch {
	case len(w.Process) == 0:
		return fmt.Errorf("missing field \"process\"")
	case string(w.Process) == `"nemesis"`:
		e.Process = NemesisProcess
		if len(w.Value) > 0 && string(w.Value) != "null" {
			if err := json.Unmarshal(w.Value, &e.Nodes); err != nil {
				return fmt.Errorf("field \"value\" must be a list of node names on a nemesis event, got %s", clip(w.Value))
			}
		}
	default:
		p, err := strconv.Atoi(string(w.Process))
		if err != nil || p < 0 {
			return fmt.Errorf("field \"process\" must be a non-negative whole number or \"nemesis\", got %s", clip(w.Process))
		}
		e.Process = p
		if len(w.Value) > 0 && string(w.Value) != "null" {
			v, err := strconv.ParseInt(string(w.Value), 10, 64)
			if err != nil {
				return fmt.Errorf("field \"value\" must be a number on a client's op, got %s", clip(w.Value))
			}
			e.Value = &v
		}
	}
	return nil
}

// clip shortens a raw JSON value for an error message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// Int64 returns a pointer to v, for Prev and Value.
func Int64(v int64) *int64 { return &v }
