package history

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/lockclient"
)

// Recorder stamps events with one monotonic clock and streams them to a
// writer as they happen, so a crash or an interrupt loses nothing that was
// recorded. It keeps no events in memory: the history lives on disk.
type Recorder struct {
	mu        sync.Mutex
	start     time.Time
	mono0     int64 // CLOCK_MONOTONIC at start; 0 when unknown
	sink      io.Writer
	whole     int64 // bytes of whole lines written
	next      int64
	err       error
	ended     bool
	observers []func(Event)
	counts    Counts
}

// Counts tallies client invocations and completions by type, for live
// progress; nemesis events are not counted.
type Counts struct {
	Invokes, OK, Fail, Info int64
}

// NewRecorder starts the test's clock now and writes to w.
func NewRecorder(w io.Writer) *Recorder {
	start := time.Now()
	mono0, _ := lockclient.Monotonic()
	return &Recorder{start: start, mono0: mono0, sink: w}
}

// FromMonotonic places a CLOCK_MONOTONIC reading (see lockclient.Monotonic), taken
// by any process on this kernel, on the test's timeline. It is exact to
// within the few nanoseconds between the two clock reads at start, which
// Record's clamping absorbs.
func (r *Recorder) FromMonotonic(ns int64) (int64, bool) {
	if r.mono0 == 0 || ns <= 0 {
		return 0, false
	}
	return ns - r.mono0, true
}

// Now is the test's monotonic time in nanoseconds. Where CLOCK_MONOTONIC
// can be read it is read directly, so that the recorder's stamps and a
// client's own readings (FromMonotonic) are one clock: start and mono0
// are two readings a moment apart, and a run preempted between them
// placed every client reading that moment too early (CI saw 10 µs).
func (r *Recorder) Now() int64 {
	if r.mono0 != 0 {
		if ns, ok := lockclient.Monotonic(); ok {
			return ns - r.mono0
		}
	}
	return int64(time.Since(r.start))
}

// Start is the wall-clock instant the test's time zero stands for.
func (r *Recorder) Start() time.Time { return r.start }

// Observe registers a function called, under the recorder's lock and in
// order, with every event recorded. It must not block or record.
func (r *Recorder) Observe(f func(Event)) {
	r.mu.Lock()
	r.observers = append(r.observers, f)
	r.mu.Unlock()
}

// Record stamps e with the next index and the current time, writes and
// flushes it, and returns it. The first write error is kept and returned by
// Err and Close; recording goes on in memory-free mode so the test finishes.
func (r *Recorder) Record(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Index = r.next
	r.next++
	e.Time = r.Now()
	// A client's own readings lie within the harness's view of the op.
	if e.Type == Info || e.Type == Invoke {
		e.Return = 0
	}
	if e.Return != 0 {
		e.Return = max(min(e.Return, e.Time), e.Call, 1)
	}
	if e.Call != 0 {
		e.Call = max(min(e.Call, e.Time), 1)
		if e.Return != 0 {
			e.Return = max(e.Return, e.Call)
		}
	}
	switch {
	case e.IsNemesis():
	case e.Type == Invoke:
		r.counts.Invokes++
	case e.Type == OK:
		r.counts.OK++
	case e.Type == Fail:
		r.counts.Fail++
	case e.Type == Info:
		r.counts.Info++
	}
	if r.ended && r.err == nil {
		r.err = fmt.Errorf("writing the history: event %d (%s %s) came after the end event (a bug in fencecheck; the history is kept as it was at the end)", e.Index, e.Type, e.F)
	}
	if r.err == nil {
		// One write per event, straight to the file: nothing waits in a
		// buffer for a crash to lose.
		b, err := json.Marshal(e)
		if err == nil {
			b = append(b, '\n')
			var n int
			n, err = r.sink.Write(b)
			if err == nil && n < len(b) {
				err = io.ErrShortWrite
			}
		}
		if err == nil {
			r.whole += int64(len(b))
		} else {
			r.err = fmt.Errorf("writing the history: %w", err)
			// A full disk can take half a line: cut the file back to
			// the last whole one, so the history still reads.
			if t, ok := r.sink.(interface{ Truncate(int64) error }); ok {
				t.Truncate(r.whole)
			}
		}
	}
	for _, f := range r.observers {
		f(e)
	}
	return e
}

// End writes the end event, {"index":N,"time":T,"type":"end"}, as the
// history's last line: the run finished — its workload ran its full time
// and its final reads were taken — and the history is its whole record.
// A run killed, crashed or interrupted never gets here, so its history
// has no end and no reader calls it valid (docs/history.md). Nothing may
// be recorded after it: a later Record is not written and makes Err
// fail. It returns Err.
func (r *Recorder) End() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.err != nil {
		return r.err
	}
	e := Event{Index: r.next, Time: r.Now(), Type: End}
	r.next++
	r.ended = true
	b, _ := e.MarshalJSON()
	b = append(b, '\n')
	n, err := r.sink.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		r.err = fmt.Errorf("writing the history's end: %w", err)
		if t, ok := r.sink.(interface{ Truncate(int64) error }); ok {
			t.Truncate(r.whole)
		}
		return r.err
	}
	r.whole += int64(len(b))
	return nil
}

// Counts returns the completions so far.
func (r *Recorder) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// Len is the number of events recorded.
func (r *Recorder) Len() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

// Err is the first error writing the history, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
