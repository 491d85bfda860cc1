package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/fencecheck/fencecheck/lockclient"
)

// The example from docs/history.md parses and keeps every field.
const example = `{"index":0,"time":1200,"process":3,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":1900,"process":3,"type":"ok","f":"acquire","key":"k0","token":34}
{"index":2,"time":2000,"process":3,"type":"invoke","f":"read","key":"k0","token":34}
{"index":3,"time":2100,"process":3,"type":"ok","f":"read","key":"k0","token":34,"value":5}
{"index":4,"time":2200,"process":3,"type":"invoke","f":"write","key":"k0","token":34,"prev":5,"value":6}
{"index":5,"time":2300,"process":3,"type":"fail","f":"write","key":"k0","token":34,"prev":5,"value":6,"error":"fenced"}
{"index":6,"time":2400,"process":"nemesis","type":"info","f":"pause","value":["c3"]}
`

func TestExampleRoundTrips(t *testing.T) {
	events, err := Parse(strings.NewReader(example))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 7 {
		t.Fatalf("%d events", len(events))
	}
	if events[1].Token != 34 || *events[3].Value != 5 || *events[4].Prev != 5 || events[5].Error != lockclient.ErrorFenced {
		t.Errorf("fields lost: %+v", events)
	}
	if !events[6].IsNemesis() || events[6].Nodes[0] != "c3" {
		t.Errorf("nemesis event: %+v", events[6])
	}
	var buf bytes.Buffer
	rec := NewRecorder(&buf)
	for _, e := range events {
		rec.Record(e)
	}
	again, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		a, b := events[i], again[i]
		a.Time, b.Time = 0, 0
		ja, _ := a.MarshalJSON()
		jb, _ := b.MarshalJSON()
		if !bytes.Equal(ja, jb) {
			t.Errorf("event %d: %s became %s", i, ja, jb)
		}
	}
}

func TestPairOps(t *testing.T) {
	events, _ := Parse(strings.NewReader(example))
	ops, faults := Pair(events)
	if len(ops) != 3 || ops[0].Token != 34 || ops[1].Value == nil || *ops[1].Value != 5 || ops[2].Error != lockclient.ErrorFenced {
		t.Fatalf("ops %+v", ops)
	}
	if len(faults) != 1 || faults[0].F != "pause" {
		t.Fatalf("faults %+v", faults)
	}
}

func TestRetiredProcessMustNotInvoke(t *testing.T) {
	h := `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":2,"process":0,"type":"info","f":"acquire","key":"k0"}
{"index":2,"time":3,"process":0,"type":"invoke","f":"acquire","key":"k0"}`
	_, err := Parse(strings.NewReader(h))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "new process id") {
		t.Fatalf("got %v", err)
	}
}

// An unfinished last line — a crash mid-write — is reported, not ignored.
func TestTruncatedLastLine(t *testing.T) {
	_, err := Parse(strings.NewReader(example[:len(example)-20]))
	if err == nil || !strings.Contains(err.Error(), "line 7") {
		t.Fatalf("got %v", err)
	}
}

// FuzzParse: no input makes the parser panic, and what it accepts it can
// write back and read again.
func FuzzParse(f *testing.F) {
	f.Add(example)
	f.Add(`{"index":0,"time":1,"process":"nemesis","type":"invoke","f":"partition","value":null}`)
	f.Add(`{"index":0,"time":1,"process":-1,"type":"ok","f":"read"}`)
	f.Fuzz(func(t *testing.T, s string) {
		events, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		rec := NewRecorder(&buf)
		for _, e := range events {
			rec.Record(e)
		}
		if _, err := Parse(&buf); err != nil {
			t.Fatalf("re-reading what was accepted: %v", err)
		}
		Pair(events)
	})
}

// A client's own call and return readings narrow an op to the part of its
// interval the transport did not take; they must lie within the harness's
// own view of it.
func TestClientReadingsNarrowTheOp(t *testing.T) {
	good := `{"index":0,"time":100,"process":0,"type":"invoke","f":"read","key":"k0","token":1}
{"index":1,"time":900,"process":0,"type":"ok","f":"read","key":"k0","token":1,"value":3,"call":300,"return":700}
{"index":2,"time":1000,"process":0,"type":"invoke","f":"write","key":"k0","token":1,"prev":3,"value":4}
{"index":3,"time":2000,"process":0,"type":"info","f":"write","key":"k0","token":1,"prev":3,"value":4,"call":1200}
`
	events, err := Parse(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := Pair(events)
	if ops[0].Call != 300 || ops[0].Return != 700 || ops[0].Done != 900 {
		t.Errorf("read: call %d return %d done %d, want 300 700 900", ops[0].Call, ops[0].Return, ops[0].Done)
	}
	if ops[1].Call != 1200 || ops[1].Return != math.MaxInt64 {
		t.Errorf("info write: call %d return %d, want 1200 and open", ops[1].Call, ops[1].Return)
	}
	var b bytes.Buffer
	for _, e := range events {
		j, _ := json.Marshal(e)
		b.Write(append(j, '\n'))
	}
	if b.String() != good {
		t.Errorf("round trip:\n%s", b.String())
	}

	for name, bad := range map[string]string{
		"call before the invoke":  `{"index":1,"time":900,"process":0,"type":"ok","f":"read","key":"k0","token":1,"value":3,"call":50}`,
		"return after completion": `{"index":1,"time":900,"process":0,"type":"ok","f":"read","key":"k0","token":1,"value":3,"return":950}`,
		"return before the call":  `{"index":1,"time":900,"process":0,"type":"ok","f":"read","key":"k0","token":1,"value":3,"call":500,"return":400}`,
		"return on an info":       `{"index":1,"time":900,"process":0,"type":"info","f":"read","key":"k0","token":1,"return":400}`,
		"readings on an invoke":   `{"index":1,"time":900,"process":1,"type":"invoke","f":"read","key":"k0","token":1,"call":400}`,
	} {
		h := `{"index":0,"time":100,"process":0,"type":"invoke","f":"read","key":"k0","token":1}` + "\n" + bad + "\n"
		_, err := Parse(strings.NewReader(h))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 2 {
			t.Errorf("%s: got %v, want an error on line 2", name, err)
		}
	}
}

// The recorder keeps a client's readings inside its own stamps.
func TestRecorderClampsClientReadings(t *testing.T) {
	var b bytes.Buffer
	r := NewRecorder(&b)
	inv := r.Record(Event{Process: 0, Type: Invoke, F: Read, Key: "k0"})
	done := r.Record(Event{Process: 0, Type: OK, F: Read, Key: "k0", Value: Int64(1), Call: inv.Time + 1, Return: math.MaxInt64 / 2})
	if done.Return != done.Time || done.Call != inv.Time+1 {
		t.Fatalf("call %d return %d time %d", done.Call, done.Return, done.Time)
	}
	if now, ok := lockclient.Monotonic(); ok {
		if at, ok := r.FromMonotonic(now); !ok || at < done.Time || at > r.Now() {
			t.Fatalf("FromMonotonic(%d) = %d, want within [%d, %d]", now, at, done.Time, r.Now())
		}
	}
	if _, err := Parse(&b); err != nil {
		t.Fatal(err)
	}
}

// fullDisk writes to f until room bytes are used, then takes only part of
// a write and fails, as a write to a full disk does.
type fullDisk struct {
	f    *os.File
	room int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	if len(b) > d.room {
		n, _ := d.f.Write(b[:d.room])
		d.room = 0
		return n, syscall.ENOSPC
	}
	d.room -= len(b)
	return d.f.Write(b)
}

func (d *fullDisk) Truncate(n int64) error { return d.f.Truncate(n) }

// A full disk keeps the first error and leaves only whole lines behind.
func TestFullDiskLeavesWholeLines(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewRecorder(&fullDisk{f: f, room: 500})
	for i := 0; i < 20; i++ {
		r.Record(Event{Process: i, Type: Invoke, F: Acquire, Key: "k0"})
	}
	if !errors.Is(r.Err(), syscall.ENOSPC) {
		t.Fatalf("Err() = %v, want no space left", r.Err())
	}
	events, err := ParseFile(f.Name())
	if err != nil {
		t.Fatalf("the history does not read back: %v", err)
	}
	if len(events) == 0 || len(events) >= 20 {
		t.Fatalf("%d events read back, want some but not all", len(events))
	}
}

// Several intervals of one fault open at once (pause-holder with
// --holders-at-once) each end at the event naming their own nodes; an end
// naming other nodes (a failover's new leader) ends the latest.
func TestPairOverlappingFaults(t *testing.T) {
	nem := func(i int64, typ Type, f string, nodes ...string) Event {
		return Event{Index: i, Time: i, Process: NemesisProcess, Type: typ, F: f, Nodes: nodes}
	}
	_, faults := Pair([]Event{
		nem(0, Invoke, "pause-holder", "c1"),
		nem(1, Invoke, "pause-holder", "c2"),
		nem(2, Info, "pause-holder", "c1"),
		nem(3, Invoke, "failover", "n1"),
		nem(4, Info, "pause-holder", "c2"),
		nem(5, Info, "failover", "n2"),
	})
	want := []Fault{{F: "pause-holder", Nodes: []string{"c1"}, Start: 0, End: 2}, {F: "pause-holder", Nodes: []string{"c2"}, Start: 1, End: 4},
		{F: "failover", Nodes: []string{"n2"}, Start: 3, End: 5}}
	if len(faults) != len(want) {
		t.Fatalf("faults %+v, want %+v", faults, want)
	}
	for i := range want {
		if faults[i].F != want[i].F || !slices.Equal(faults[i].Nodes, want[i].Nodes) || faults[i].Start != want[i].Start || faults[i].End != want[i].End {
			t.Errorf("fault %d: %+v, want %+v", i, faults[i], want[i])
		}
	}
}
