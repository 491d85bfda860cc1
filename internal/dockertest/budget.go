package dockertest

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/buildlock"
)

// A Docker test's budget (Budgets) is watched while the test runs, from
// its first call to Engine to the end of its cleanups. At the budget the
// test fails, naming itself, its time and its budget; if it is still
// running budgetGrace later (a hang, or a teardown that never ends), the
// test process ends with a panic that names the test again and dumps
// every goroutine, so the log says what it was waiting on, and
// scripts/testsummary names it among the failed tests. A hung test thus
// costs its budget and a minute, not the package's 80-minute timeout. The
// process's own containers stay behind then, under the test id its log
// names.
//
// The budget is the top test's: its subtests' calls to Engine count
// against it too, and the time between them while no test of it holds
// the engine is not counted.

// budgetGrace is how long a test past its budget has to end (its cleanups
// tear a cluster down in seconds; under load, up to about half a minute)
// before the process is ended.
var budgetGrace = time.Minute

// endProcess ends the test process over a hung test: a panic, with every
// goroutine's stack (as go test's own -timeout does), after every process
// it started (a compile under way) is killed, so none outlives it.
var endProcess = func(msg string) {
	if n := killDescendants(); n > 0 {
		msg += fmt.Sprintf(" (%d processes it had started killed first)", n)
	}
	debug.SetTraceback("all")
	panic(msg)
}

// unlistedBudget is the budget of a Docker test missing from Budgets
// outside CI (under CI=true such a test fails at once).
const unlistedBudget = severalRuns

// watch counts the time of one top test against its budget.
type watch struct {
	name   string // the top test's name
	limit  time.Duration
	top    testing.TB          // the top test itself, once it called Engine
	users  map[testing.TB]bool // the top test or its subtests, from Engine to their cleanups
	paused int                 // OutsideBudget calls under way
	spent  time.Duration       // counted before since
	since  time.Time           // when counting last started
	timer  *time.Timer         // fires at the budget, while counting
	over   bool                // past the budget: failed, and ending
	// waitBase is buildlock.Waited when the watch began: what the
	// process waited since then for builds held by other processes (the
	// image build CI runs beside the tests) is not the test's own time.
	waitBase time.Duration
}

// watches are the top tests' watches, by name; watchesMu guards them and
// every field of each.
var (
	watchesMu sync.Mutex
	watches   = map[string]*watch{}
)

// watchBudget starts counting test t's time against its top test's
// budget; Engine calls it. A Docker test missing from Budgets fails under
// CI=true.
func watchBudget(t testing.TB) {
	t.Helper()
	top, _, sub := strings.Cut(t.Name(), "/")
	limit, ok := BudgetOf(top)
	if !ok {
		if CI() {
			t.Fatalf("%s has no time budget: add it to the table in internal/dockertest/budgets.go (Budgets), with what it does and, once measured, its time", top)
		}
		t.Logf("%s has no time budget in internal/dockertest/budgets.go: %s until it has one (under CI=true it fails)", top, unlistedBudget)
		limit = unlistedBudget
	}
	watchesMu.Lock()
	defer watchesMu.Unlock()
	w := watches[top]
	// The top test calling again under another *testing.T is a new run of
	// it (go test -count=N): its budget starts afresh.
	if w == nil || (!sub && w.top != nil && w.top != t && len(w.users) == 0) {
		w = &watch{name: top, limit: limit, users: map[testing.TB]bool{}, waitBase: buildlock.Waited()}
		watches[top] = w
	}
	if !sub {
		w.top = t
	}
	if w.users[t] {
		return
	}
	w.change(func() { w.users[t] = true })
	t.Cleanup(func() {
		watchesMu.Lock()
		defer watchesMu.Unlock()
		w.change(func() { delete(w.users, t) })
	})
}

// OutsideBudget runs f, on which test t waits for what is not its own
// (the node image that the first test of a process builds for all of
// them), without counting f's time against t's budget.
func OutsideBudget(t testing.TB, f func()) {
	top, _, _ := strings.Cut(t.Name(), "/")
	watchesMu.Lock()
	w := watches[top]
	if w != nil {
		w.change(func() { w.paused++ })
	}
	watchesMu.Unlock()
	if w != nil {
		// A build f made or waited for (buildlock) is not counted here,
		// so it must not be taken off the count again by expire.
		before := buildlock.Waited()
		defer func() {
			watchesMu.Lock()
			defer watchesMu.Unlock()
			w.waitBase += buildlock.Waited() - before
			w.change(func() { w.paused-- })
		}()
	}
	f()
}

func (w *watch) counting() bool { return len(w.users) > 0 && w.paused == 0 }

// elapsed is the time counted so far.
func (w *watch) elapsed() time.Duration {
	if w.counting() {
		return w.spent + time.Since(w.since)
	}
	return w.spent
}

// change applies f (a test entering or leaving, a pause starting or
// ending) with the count stopped, and restarts the count and its timer
// if it still runs. The caller holds watchesMu.
func (w *watch) change(f func()) {
	if w.counting() {
		w.spent += time.Since(w.since)
		w.timer.Stop()
	}
	f()
	if w.counting() {
		w.since = time.Now()
		w.timer = time.AfterFunc(w.limit-w.spent, w.expire)
	}
}

// expire fails the test at its budget, and ends the process if the test
// is still running budgetGrace later.
func (w *watch) expire() {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	if w.over || !w.counting() || w.elapsed() < w.limit {
		return // stopped, or a timer armed before the count stopped
	}
	// A wait for another process's build (buildlock) is not the test's
	// own time: the budget is moved on by it, and watched again then.
	if waited := buildlock.Waited() - w.waitBase; waited > 0 {
		w.waitBase += waited
		w.spent -= waited
		w.timer = time.AfterFunc(w.limit-w.elapsed(), w.expire)
		return
	}
	w.over = true
	// The deepest test running is told; the failure reaches its parents.
	var deepest testing.TB
	for u := range w.users {
		if deepest == nil || len(u.Name()) > len(deepest.Name()) {
			deepest = u
		}
	}
	deepest.Errorf("%s has run %s, past its budget of %s (internal/dockertest/budgets.go): make it leaner (a shorter workload, a shared cluster), or raise its budget there with the measured reason; the test process ends in %s unless the test ends first",
		w.name, w.elapsed().Round(time.Second), w.limit, budgetGrace)
	time.AfterFunc(budgetGrace, w.abort)
}

// abort ends the process over a test still running budgetGrace past its
// budget.
func (w *watch) abort() {
	watchesMu.Lock()
	if len(w.users) == 0 {
		watchesMu.Unlock()
		return // it ended in its grace, failed by expire
	}
	msg := fmt.Sprintf("dockertest: %s has run %s, past its budget of %s and %s of grace: ending the test process (every goroutine below)",
		w.name, w.elapsed().Round(time.Second), w.limit, budgetGrace)
	watchesMu.Unlock()
	endProcess(msg)
}
