package dockertest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what it was told, so a budget's
// verdict can be read after its cleanups ran.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper()          {}
func (r *recorder) Name() string     { return "TestDockerSlow" }
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, strings.TrimSpace(fmt.Sprintf(f, a...)))
}

func (r *recorder) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestBudgetFailsATestOverItWithItsNameAndTime(t *testing.T) {
	r := &recorder{TB: t}
	Budget(r, 10*time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	r.finish()
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "TestDockerSlow took ") || !strings.Contains(r.errors[0], "over its budget of 10ms") {
		t.Errorf("errors = %q, want one naming the test, its time and its budget", r.errors)
	}
}

func TestBudgetPassesATestWithinIt(t *testing.T) {
	r := &recorder{TB: t}
	Budget(r, time.Minute)
	r.finish()
	if len(r.errors) != 0 {
		t.Errorf("errors = %q, want none", r.errors)
	}
}

// A test's own budget stands whether it is set before or after Engine's
// default, and is counted from the first of them.
func TestBudgetOwnBeatsTheDefault(t *testing.T) {
	before := &recorder{TB: t}
	Budget(before, time.Minute)
	defaultBudget(before)
	time.Sleep(5 * time.Millisecond)
	before.finish()
	after := &recorder{TB: t}
	defaultBudget(after)
	Budget(after, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	after.finish()
	if len(before.errors) != 0 || len(after.errors) != 1 || len(before.cleanups) != 1 || len(after.cleanups) != 1 {
		t.Errorf("own budget before the default: %q (%d cleanups); after: %q (%d cleanups)", before.errors, len(before.cleanups), after.errors, len(after.cleanups))
	}
}
