package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// interrupter cancels a run's Stop (and, when abort, Abort) when the run
// reaches a phase, after delay. It records the phases the run went
// through.
type interrupter struct {
	at    string
	delay time.Duration
	abort bool

	stop, abortCtx         context.Context
	cancelStop, cancelAbrt context.CancelFunc
	mu                     sync.Mutex
	seen                   []string
	fired                  time.Time
}

func newInterrupter(at string, delay time.Duration, abort bool) *interrupter {
	i := &interrupter{at: at, delay: delay, abort: abort}
	i.stop, i.cancelStop = context.WithCancel(context.Background())
	i.abortCtx, i.cancelAbrt = context.WithCancel(context.Background())
	return i
}

func (i *interrupter) signals() Signals { return Signals{Stop: i.stop, Abort: i.abortCtx} }

func (i *interrupter) hook(phase string) {
	i.mu.Lock()
	i.seen = append(i.seen, phase)
	i.mu.Unlock()
	if phase != i.at {
		return
	}
	fire := func() {
		i.mu.Lock()
		i.fired = time.Now()
		i.mu.Unlock()
		i.cancelStop()
		if i.abort {
			i.cancelAbrt()
		}
	}
	if i.delay == 0 {
		fire()
		return
	}
	time.AfterFunc(i.delay, fire)
}

func (i *interrupter) phases() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.seen...)
}

func (i *interrupter) firedAt() time.Time {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.fired
}

func (i *interrupter) close() {
	i.cancelStop()
	i.cancelAbrt()
}

// checkStore asserts what every run, however it ended, leaves in its
// directory: a history whose every line is whole and which parses, every
// fault healed in it, and results.json with the outcome's verdict, the
// interrupted flag and the error. It returns the history's events.
func checkStore(t *testing.T, out *RunResult, runErr error) []history.Event {
	t.Helper()
	if out == nil || out.Dir == "" {
		t.Fatalf("no run directory (error %v)", runErr)
	}
	raw, err := os.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		t.Errorf("history.jsonl ends in the middle of a line: %q", tailOf(raw, 80))
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("history.jsonl line %d is not whole: %q", n, sc.Text())
		}
	}
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatalf("history.jsonl does not parse: %v", err)
	}
	// The end event is there when the run finished, and only then: a run
	// stopped before the end of its final reads must not say it did (an
	// interrupt during the teardown, the check or the report comes after
	// the end; a teardown that fails does too).
	if h, err := history.LoadFile(filepath.Join(out.Dir, "history.jsonl")); err != nil ||
		(h.Ended && out.Incomplete != "") || (!h.Ended && out.Incomplete == "" && runErr == nil) {
		t.Errorf("history ended %v, but the run's incomplete is %q and its error %v (%v)", h.Ended, out.Incomplete, runErr, err)
	}
	started := map[string]int{}
	for _, e := range events {
		if e.IsNemesis() && e.F != "" {
			switch e.Type {
			case history.Invoke:
				started[e.F]++
			case history.Info:
				if len(e.Nodes) > 0 {
					started[e.F]--
				}
			}
		}
	}
	for f, n := range started {
		if n > 0 {
			t.Errorf("%d %s faults started and never healed in the history", n, f)
		}
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, "results.json"))
	if err != nil {
		t.Fatalf("results.json: %v", err)
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("results.json does not parse: %v", err)
	}
	if res.Verdict != out.Result.Verdict {
		t.Errorf("results.json says %s, the outcome %s", res.Verdict, out.Result.Verdict)
	}
	if res.Interrupted != out.Interrupted {
		t.Errorf("results.json interrupted %v, the outcome %v", res.Interrupted, out.Interrupted)
	}
	if res.Events != len(events) {
		t.Errorf("results.json counts %d events, history.jsonl has %d", res.Events, len(events))
	}
	switch {
	case runErr != nil && res.Error == "":
		t.Errorf("the run failed (%v) and results.json does not say so", runErr)
	case runErr == nil && res.Error != "":
		t.Errorf("results.json has an error for a run that succeeded: %s", res.Error)
	}
	if runErr != nil && res.Verdict == models.Valid {
		t.Errorf("a run that failed (%v) is valid", runErr)
	}
	for _, f := range []string{"report.html", "check.log"} {
		if st, err := os.Stat(filepath.Join(out.Dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty (%v)", f, err)
		}
	}
	return events
}

func tailOf(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}

// finalAcquires counts the acquires of the final reads: the processes
// from firstFinal on (the workload's slots use 0..Clients-1 while no
// process is retired).
func finalAcquires(events []history.Event, firstFinal int) int {
	n := 0
	for _, e := range events {
		if !e.IsNemesis() && e.Type == history.Invoke && e.F == history.Acquire && e.Process >= firstFinal {
			n++
		}
	}
	return n
}

// An interrupt at each phase of an in-process run, the first signal alone
// or both: the run ends promptly, every fault is healed, the history is
// whole, results.json has the right verdict (unknown when the check was
// skipped, or when the workload or the final reads were cut short), and
// only an interrupt during setup is an error.
func TestInterruptAtEveryPhaseInProcess(t *testing.T) {
	cases := []struct {
		phase   string
		delay   time.Duration
		abort   bool
		wantErr string         // "" for no error
		verdict models.Verdict // "" for valid or unknown (a check with few ops)
		final   bool           // the final reads are in the history
	}{
		{phase: "setup", wantErr: "interrupted during setup", verdict: models.Unknown},
		// Cut short before its time limit or its final reads: no violation
		// in what ran is not a verdict.
		{phase: "workload", delay: 700 * time.Millisecond, verdict: models.Unknown},
		{phase: "workload", delay: 700 * time.Millisecond, abort: true, verdict: models.Unknown},
		{phase: "heal", verdict: models.Unknown},
		{phase: "final reads", verdict: models.Unknown},
		{phase: "teardown", verdict: models.Valid, final: true},
		{phase: "check", verdict: models.Valid, final: true},
		{phase: "check", abort: true, verdict: models.Unknown, final: true},
		{phase: "report", abort: true, verdict: models.Valid, final: true},
	}
	for _, c := range cases {
		name := strings.ReplaceAll(c.phase, " ", "-")
		if c.abort {
			name += "-twice"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := memoryConfig(t, "all", "pause")
			cfg.Keys = 2
			cfg.TimeLimit = 2 * time.Second
			cfg.PauseDuration = 10 * time.Second // a client is frozen when the workload ends
			cfg.NemesisInterval = 200 * time.Millisecond
			in := newInterrupter(c.phase, c.delay, c.abort)
			defer in.close()
			began := time.Now()
			out, err := runWith(in.signals(), cfg, nil, &runState{phaseHook: in.hook})
			took := time.Since(began)
			if took > 15*time.Second {
				t.Errorf("the run took %s", took)
			}
			if in.firedAt().IsZero() {
				t.Fatalf("the run never reached %s: %v", c.phase, in.phases())
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("interrupt at %s: %v", c.phase, err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("interrupt at %s: error %v, want %q", c.phase, err, c.wantErr)
			}
			events := checkStore(t, out, err)
			// A signal during the report comes after the outcome is settled.
			if want := c.phase != "report"; out.Interrupted != want {
				t.Errorf("interrupted %v, want %v", out.Interrupted, want)
			}
			if out.Result.Verdict != c.verdict {
				t.Errorf("verdict %s (%s), want %s", out.Result.Verdict, out.Result.Explanation, c.verdict)
			}
			if c.abort && c.phase != "report" && !strings.Contains(out.Result.Explanation, "skipped") {
				t.Errorf("a skipped check explains: %s", out.Result.Explanation)
			}
			ops, _ := history.Pair(events)
			last := history.Op{}
			if len(ops) > 0 {
				last = ops[len(ops)-1]
			}
			// The final reads end with the release of the last key.
			hasFinal := last.F == history.Release && last.Key == keyName(cfg.Keys-1) && last.Process >= cfg.Clients
			if hasFinal != c.final {
				t.Errorf("final reads in the history: %v, want %v (last op %+v)", hasFinal, c.final, last)
			}
			if c.phase == "report" && c.abort {
				// The report is finished, whatever the signals say.
				if _, err := os.Stat(filepath.Join(out.Dir, "linearizability.html")); err != nil {
					t.Error(err)
				}
			}
			t.Logf("interrupt at %s%s: %s in %s, %d events, phases %v", c.phase, map[bool]string{true: " (twice)"}[c.abort],
				out.Result.Verdict, took.Round(time.Millisecond), len(events), in.phases())
		})
	}
}

// The first signal during the final reads ends them at once, keeps what
// they recorded (every invoke completed) and goes on to the check; the
// verdict is unknown, since the final state was not read. The signal comes
// when the tenth key's final read is recorded, not after a time: a fast
// machine takes all 400 in less than any delay a timer could wait.
func TestInterruptDuringFinalReadsKeepsWhatWasRead(t *testing.T) {
	cfg := memoryConfig(t, "all", "none")
	cfg.Keys = 400
	cfg.TimeLimit = time.Second
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	var fired time.Time
	var mu sync.Mutex
	var finalReads atomic.Bool
	reads := 0
	st := &runState{}
	st.phaseHook = func(p string) { finalReads.Store(p == "final reads") }
	st.recordHook = func(e history.Event) {
		if !finalReads.Load() || e.IsNemesis() || e.F != history.Read || e.Type != history.OK {
			return
		}
		if reads++; reads == 10 {
			mu.Lock()
			fired = time.Now()
			mu.Unlock()
			cancel()
		}
	}
	out, err := runWith(Signals{Stop: stop, Abort: context.Background()}, cfg, nil, st)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	at := fired
	mu.Unlock()
	if at.IsZero() {
		t.Fatal("the tenth final read was never recorded")
	}
	after := time.Since(at)
	events := checkStore(t, out, err)
	if !out.Interrupted {
		t.Error("not marked interrupted")
	}
	if out.Result.Verdict != models.Unknown || !strings.Contains(out.Result.Explanation, "interrupted during the final reads") {
		t.Fatalf("final reads cut short: %s (%s), want unknown saying so", out.Result.Verdict, out.Result.Explanation)
	}
	n := finalAcquires(events, cfg.Clients)
	if n == 0 || n >= cfg.Keys {
		t.Errorf("final reads of %d keys recorded, want some but not all %d", n, cfg.Keys)
	}
	// The check and the report come after the interrupt: a bound on the
	// behaviour (the run ends once it is interrupted), with room for a
	// loaded 2-core machine.
	if after > 30*time.Second {
		t.Errorf("the run went on %s after the interrupt", after)
	}
	t.Logf("final reads of %d of %d keys before the interrupt; the run ended %s after it", n, cfg.Keys, after.Round(time.Millisecond))
}
