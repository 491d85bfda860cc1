package compare

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/harness"
)

// An interrupt while three runs go on at once (issue 39's known answer):
// every slot's run heals and ends unknown, no new run starts, the
// comparison is marked interrupted (exit 255), and no container or
// network of the comparison is left on the engine — warm clusters
// included.
func TestDockerParallelInterrupt(t *testing.T) {
	bin := dockerOrSkip(t)
	cli, err := engine.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	base := DefaultBase()
	base.AgentBinary = bin
	// Four cells on three slots: the fourth never starts.
	m := &Matrix{Faults: []string{"pause"}, Runs: 1, TimeLimit: 90 * time.Second, Seed: 3, Base: base, Parallel: 3,
		Rows: []Row{docker("etcd", "mutex", "fenced", "all"), docker("redis", "setnx-incr", "fenced", "all"),
			docker("postgres", "lease", "fenced", "all"), docker("etcd", "lock-rpc", "fenced", "all")}}
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	w := &interruptAfter{t: t, when: "slot 3: ", dir: dir, runs: 3, cancel: cancel}
	c, err := Run(harness.Signals{Stop: stop, Abort: context.Background()}, m, dir, w)
	if err != nil {
		t.Fatal(err)
	}
	if !w.fired() {
		t.Fatal("three runs never went on at once")
	}
	for i, r := range c.Rows {
		want := "unknown 1/1" // under way, interrupted in its workload
		if i == 3 {
			want = "not run" // never handed out
		}
		if got := r.Cells[0].VerdictText(); got != want {
			t.Errorf("%s %s: %s, want %s", r.Backend, r.Recipe, got, want)
		}
	}
	if !c.Interrupted || ExitCode(c) != harness.ExitFailed {
		t.Errorf("interrupted %v, exit %d; want true, %d", c.Interrupted, ExitCode(c), harness.ExitFailed)
	}
	// The Docker test ids the runs used, as their logs name them; the
	// comparison's clusters, warm ones included, must all be gone.
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "*", "check.log"))
	ids := map[string]bool{}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		for _, id := range testIDs.FindAllString(string(b), -1) {
			ids[id] = true
		}
	}
	if len(ids) < 3 {
		t.Fatalf("found the test ids %v in %d logs, want the 3 runs'", ids, len(logs))
	}
	for id := range ids {
		f := filters.NewArgs(filters.Arg("label", engine.LabelTest+"="+id))
		cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
		if err != nil || len(cs) > 0 {
			t.Errorf("%s: %d containers left behind (%v)", id, len(cs), err)
		}
		ns, err := cli.NetworkList(context.Background(), network.ListOptions{Filters: f})
		if err != nil || len(ns) > 0 {
			t.Errorf("%s: %d networks left behind (%v)", id, len(ns), err)
		}
	}
}

// testIDs matches the Docker test ids a run's log names (harness.testID).
var testIDs = regexp.MustCompile(`\b(?:etcd|redis|postgres)-[0-9]{6}\.[0-9]{3}(?:-[0-9]+)?\b`)

// interruptAfter is a progress writer that, after the first line
// containing when, waits until runs histories under dir have events —
// every slot's workload is under way — and cancels a few seconds later.
type interruptAfter struct {
	t      *testing.T
	when   string
	dir    string
	runs   int
	cancel func()
	mu     sync.Mutex
	armed  bool
}

func (w *interruptAfter) watch() {
	for end := time.Now().Add(4 * time.Minute); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(w.dir, "*", "*", "history.jsonl"))
		started := 0
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Size() > 1000 {
				started++
			}
		}
		if started >= w.runs {
			time.Sleep(3 * time.Second)
			break
		}
	}
	w.cancel()
}

func (w *interruptAfter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.armed && strings.Contains(string(b), w.when) {
		w.armed = true
		go w.watch()
	}
	return len(b), nil
}

func (w *interruptAfter) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.armed
}
