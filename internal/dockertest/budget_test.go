package dockertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/buildlock"
)

// recorder is a testing.TB that keeps what it was told, so a budget's
// verdict can be read while the "test" runs and after its cleanups ran.
type recorder struct {
	testing.TB
	name     string
	mu       sync.Mutex
	errors   []string
	fatals   []string
	cleanups []func()
}

func (r *recorder) Helper()             {}
func (r *recorder) Name() string        { return r.name }
func (r *recorder) Cleanup(f func())    { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Errorf(f string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, strings.TrimSpace(fmt.Sprintf(f, a...)))
}

// Fatalf ends the goroutine, as testing's does; run the recorder's test
// in a goroutine of its own (fatalIn) to see it.
func (r *recorder) Fatalf(f string, a ...any) {
	r.mu.Lock()
	r.fatals = append(r.fatals, fmt.Sprintf(f, a...))
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) said() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

func (r *recorder) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// withBudget puts name in the table with budget limit, and the grace and
// the process's end as given, for the test's length.
func withBudget(t *testing.T, name string, limit, grace time.Duration, end func(string)) {
	Budgets[name] = limit
	oldGrace, oldEnd := budgetGrace, endProcess
	budgetGrace, endProcess = grace, end
	t.Cleanup(func() {
		delete(Budgets, name)
		budgetGrace, endProcess = oldGrace, oldEnd
		watchesMu.Lock()
		delete(watches, name)
		watchesMu.Unlock()
	})
}

// A test past its budget fails while it runs, naming itself, its time and
// its budget; still running a grace later, it ends the process, named
// again.
func TestBudgetFailsAHungTestWhileItRuns(t *testing.T) {
	ended := make(chan string, 1)
	withBudget(t, "TestDockerSlow", 30*time.Millisecond, 50*time.Millisecond, func(msg string) { ended <- msg })
	r := &recorder{TB: t, name: "TestDockerSlow"}
	watchBudget(r)
	defer r.finish()
	select {
	case msg := <-ended:
		errs := r.said()
		if len(errs) != 1 || !strings.Contains(errs[0], "TestDockerSlow has run ") || !strings.Contains(errs[0], "past its budget of 30ms") {
			t.Errorf("errors while it ran = %q, want one naming the test, its time and its budget", errs)
		}
		if !strings.Contains(msg, "TestDockerSlow has run ") || !strings.Contains(msg, "past its budget of 30ms and 50ms of grace") {
			t.Errorf("the process's end says %q, want the test, its time, its budget and the grace", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a test 5 s past its 30 ms budget is still running; errors %q", r.said())
	}
}

// A test that ends within its grace fails, and the process goes on.
func TestBudgetSparesTheProcessOfATestEndingInItsGrace(t *testing.T) {
	ended := make(chan string, 1)
	withBudget(t, "TestDockerSlow", 20*time.Millisecond, 200*time.Millisecond, func(msg string) { ended <- msg })
	r := &recorder{TB: t, name: "TestDockerSlow"}
	watchBudget(r)
	time.Sleep(60 * time.Millisecond)
	r.finish()
	if errs := r.said(); len(errs) != 1 || !strings.Contains(errs[0], "past its budget of 20ms") {
		t.Errorf("errors = %q, want one for the budget", errs)
	}
	select {
	case msg := <-ended:
		t.Errorf("the process was ended over a test that had ended: %s", msg)
	case <-time.After(400 * time.Millisecond):
	}
}

func TestBudgetPassesATestWithinIt(t *testing.T) {
	withBudget(t, "TestDockerQuick", time.Minute, time.Minute, func(msg string) { t.Errorf("process ended: %s", msg) })
	r := &recorder{TB: t, name: "TestDockerQuick"}
	watchBudget(r)
	r.finish()
	if errs := r.said(); len(errs) != 0 {
		t.Errorf("errors = %q, want none", errs)
	}
}

// Waiting for what is not the test's own (the node image) does not count;
// subtests count against their top test's one budget.
func TestBudgetCountsOnlyTheTestsOwnTimeOverItsSubtests(t *testing.T) {
	withBudget(t, "TestDockerSplit", 150*time.Millisecond, time.Minute, func(string) {})
	a := &recorder{TB: t, name: "TestDockerSplit/a"}
	watchBudget(a)
	OutsideBudget(a, func() { time.Sleep(300 * time.Millisecond) })
	time.Sleep(80 * time.Millisecond)
	a.finish()
	if errs := a.said(); len(errs) != 0 {
		t.Errorf("the first subtest (80 ms its own, 300 ms outside) failed its 150 ms budget: %q", errs)
	}
	b := &recorder{TB: t, name: "TestDockerSplit/b"}
	watchBudget(b)
	time.Sleep(200 * time.Millisecond)
	b.finish()
	if errs := b.said(); len(errs) != 1 || !strings.Contains(errs[0], "TestDockerSplit has run ") {
		t.Errorf("the second subtest (80+200 ms of the top test's 150 ms) says %q, want the top test's budget failed", errs)
	}
}

// fatalIn runs watchBudget for r in a goroutine of its own, as a test
// would, and returns once it returned or called Fatalf.
func fatalIn(r *recorder) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchBudget(r)
	}()
	<-done
}

func TestADockerTestMissingFromTheTableFailsUnderCI(t *testing.T) {
	t.Setenv("CI", "true")
	r := &recorder{TB: t, name: "TestDockerNotInTheTable/sub"}
	fatalIn(r)
	if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "TestDockerNotInTheTable has no time budget: add it to the table in internal/dockertest/budgets.go") {
		t.Errorf("fatals = %q, want one naming the test and the table", r.fatals)
	}
	r.finish()
}

// The process's end, for real: a helper process whose test hangs past a
// tiny budget panics with the test's name, its time, its budget and every
// goroutine.
func TestBudgetEndsAHungTestsProcessNamingIt(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHungPastItsBudget$", "-test.v")
	cmd.Env = append(os.Environ(), "DOCKERTEST_HANG=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the hung helper exited 0:\n%s", out)
	}
	for _, want := range []string{
		"TestDockerHung has run ", "past its budget of 50ms (internal/dockertest/budgets.go)", // the failure
		"panic: dockertest: TestDockerHung has run ", "past its budget of 50ms and 50ms of grace", // the end
		"TestHungPastItsBudget", // the hung test's goroutine, among all of them
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the hung helper's output lacks %q:\n%s", want, out)
		}
	}
}

// TestHungPastItsBudget is the hung test of the helper process above; it
// does nothing in the ordinary run.
func TestHungPastItsBudget(t *testing.T) {
	if os.Getenv("DOCKERTEST_HANG") != "1" {
		return
	}
	Budgets["TestDockerHung"] = 50 * time.Millisecond
	budgetGrace = 50 * time.Millisecond
	watchBudget(renamed{t, "TestDockerHung"})
	select {}
}

// renamed is a test under another name.
type renamed struct {
	*testing.T
	name string
}

func (r renamed) Name() string { return r.name }

// Every Docker test of the repository has its budget in the table, and
// the table names no test that is gone.
func TestEveryDockerTestHasABudget(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^func (TestDocker\w*)\(`)
	found := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range def.FindAllStringSubmatch(string(b), -1) {
			rel, _ := filepath.Rel(root, path)
			if other, dup := found[m[1]]; dup {
				t.Errorf("%s is defined in %s and %s: the table goes by name, so each name once", m[1], other, rel)
			}
			found[m[1]] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 10 {
		t.Fatalf("found only %d Docker tests under %s: the walk missed the repository", len(found), root)
	}
	var missing, gone []string
	for name, file := range found {
		if _, ok := Budgets[name]; !ok {
			missing = append(missing, name+" ("+file+")")
		}
	}
	for name := range Budgets {
		if _, ok := found[name]; !ok {
			gone = append(gone, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(gone)
	if len(missing) > 0 {
		t.Errorf("Docker tests with no budget: add them to Budgets in internal/dockertest/budgets.go:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(gone) > 0 {
		t.Errorf("Budgets names tests that no longer exist: remove them:\n  %s", strings.Join(gone, "\n  "))
	}
}

// A wait for another process's build (internal/buildlock: the image
// build CI runs beside the tests) is not counted: a test that waited
// longer than its budget for a compile, then ran briefly, passes.
func TestBudgetDoesNotCountWaitsForAnotherProcesssBuild(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	withBudget(t, "TestDockerWaits", 150*time.Millisecond, time.Minute, func(msg string) { t.Errorf("process ended: %s", msg) })
	holder, err := buildlock.Acquire(context.Background(), "etcd-3.5", "etcd 3.5's compile", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t, name: "TestDockerWaits"}
	watchBudget(r)
	time.AfterFunc(600*time.Millisecond, holder)
	release, err := buildlock.Acquire(context.Background(), "etcd-3.5", "etcd 3.5's compile", nil)
	if err != nil {
		t.Fatal(err)
	}
	release()
	time.Sleep(50 * time.Millisecond) // the test's own work
	r.finish()
	if errs := r.said(); len(errs) != 0 {
		t.Errorf("a test that waited 600 ms for another's build failed its 150 ms budget: %q", errs)
	}
	// And a test that then goes past its budget of its own still fails.
	r2 := &recorder{TB: t, name: "TestDockerWaits"}
	withBudget(t, "TestDockerWaits", 50*time.Millisecond, time.Minute, func(string) {})
	watchBudget(r2)
	time.Sleep(200 * time.Millisecond)
	r2.finish()
	if errs := r2.said(); len(errs) != 1 {
		t.Errorf("a test 150 ms past its own 50 ms budget: errors %q, want one", errs)
	}
}

// A build the test makes itself, holding its lock (the first test to need
// a server CI's image build had not reached yet), is not counted either;
// nor is it taken off twice when it was already outside the budget.
func TestBudgetDoesNotCountTheBuildATestMakes(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	withBudget(t, "TestDockerBuilds", 150*time.Millisecond, time.Minute, func(msg string) { t.Errorf("process ended: %s", msg) })
	r := &recorder{TB: t, name: "TestDockerBuilds"}
	watchBudget(r)
	release, err := buildlock.Acquire(context.Background(), "nats-server", "nats-server's compile", nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the compile
	release()
	time.Sleep(50 * time.Millisecond) // the test's own work
	r.finish()
	if errs := r.said(); len(errs) != 0 {
		t.Errorf("a test that compiled for 500 ms failed its 150 ms budget: %q", errs)
	}
	// A build inside OutsideBudget is discounted once: the test's own
	// 200 ms after it still go past a 100 ms budget.
	withBudget(t, "TestDockerBuilds", 100*time.Millisecond, time.Minute, func(string) {})
	r2 := &recorder{TB: t, name: "TestDockerBuilds"}
	watchBudget(r2)
	OutsideBudget(r2, func() {
		release, err := buildlock.Acquire(context.Background(), "node-image", "the node image", nil)
		if err != nil {
			t.Error(err)
			return
		}
		time.Sleep(400 * time.Millisecond)
		release()
	})
	time.Sleep(200 * time.Millisecond)
	r2.finish()
	if errs := r2.said(); len(errs) != 1 {
		t.Errorf("200 ms of its own against a 100 ms budget, after a build outside it: errors %q, want one", errs)
	}
}
