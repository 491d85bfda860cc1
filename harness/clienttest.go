package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness/agent"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/runstore"
)

// ClientTest is `check client-test`: it starts a small real cluster of
// cfg.Backend with two client containers and drives cfg.ClientDir's
// program through the protocol — the ready handshake, each op, the
// checkpoint of a stopped write, a second process on the same key (kept
// out while the first holds it, an acquire whose deadline passes, let in
// after the release), an unknown op. It prints one line per check to out:
// passed, or what was expected and the lines exchanged. It returns how
// many checks failed; an error means the test could not be carried out.
//
// keep, when not "", is a directory that keeps what the test did whether
// it passed or not (the client's stderr and the servers' logs in logs/,
// every line exchanged in exchange.log): a client author's only view of
// a passing client's tokens. It must not exist yet or be empty, so that
// nothing of an earlier test is mistaken for this one's.
func ClientTest(ctx context.Context, cfg Config, keep string, out io.Writer) (failed int, err error) {
	cfg.Nemesis = []string{nemesis.None}
	cfg.Clients, cfg.Keys = 2, 1
	cfg.Cluster, cfg.Fencing = registry.ClusterDocker, "all"
	if cfg.Storage != "" && cfg.Storage != registry.DefaultStorage {
		cfg.Fencing = "none" // the program's own check is the fence
	}
	cfg.TimeLimit, cfg.NemesisInterval, cfg.CheckTimeout = 30*time.Second, 2*time.Second, time.Minute
	if cfg.Nodes == 0 {
		cfg.Nodes = 3 // where the backend has a choice; the smallest
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 2 * time.Second
	}
	if cfg.Store == "" {
		cfg.Store = runstore.DefaultRoot // checked, never written
	}
	// Any name the defaults would derive starts with the backend's: the
	// test is named client-test then (the store is never written).
	if cfg.Name == "" || strings.HasPrefix(cfg.Name, cfg.Backend) {
		cfg.Name = "client-test"
	}
	tt, err := resolve(cfg, nil)
	if err != nil {
		return 0, err
	}
	cfg = tt.cfg
	if err := checkKeepDir(keep); err != nil {
		return 0, err
	}
	dir := keep
	if dir == "" {
		dir, err = os.MkdirTemp("", "fencecheck-client-test-")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return 0, err
	}
	removeDir := func() {
		if keep == "" {
			os.RemoveAll(dir)
		}
	}
	st := &runState{testID: "ct-" + testID(&cfg, time.Now())}
	logf := func(format string, args ...any) { fmt.Fprintf(out, "  "+format+"\n", args...) }
	fmt.Fprintf(out, "client-test: client %s (%s) against %s\n", tt.client.Manifest.Name, cfg.ClientDir, cfg.Backend)
	sys, err := systemSetup{t: tt, st: st, dir: runstore.Run(dir), logf: logf, progress: out}.openDocker(ctx)
	if err != nil {
		removeDir()
		return 0, err
	}
	t := &clientTest{out: out, ttl: cfg.LeaseTTL}
	var exchange *os.File
	if keep != "" {
		if exchange, err = os.Create(filepath.Join(dir, exchangeLog)); err != nil {
			sys.Close(context.Background())
			return 0, err
		}
		t.exchange = exchange
	}
	sys.trace = t.record
	defer func() {
		sys.Close(context.Background())
		switch {
		case keep != "":
			exchange.Close()
			fmt.Fprintf(out, "kept in %s: logs/ (the client's stderr, the servers' logs) and %s (every line exchanged, the tokens in them)\n", dir, exchangeLog)
		case failed == 0:
			removeDir()
		default:
			fmt.Fprintf(out, "the client's stderr and the servers' logs are in %s/logs\n", dir)
		}
	}()
	t.run(ctx, sys)
	fmt.Fprintf(out, "%d of %s passed\n", t.checks-t.failed, words.Plural(t.checks, "check"))
	return t.failed, nil
}

type clientTest struct {
	out    io.Writer
	ttl    time.Duration
	checks int
	failed int

	mu    sync.Mutex
	lines []string
	// exchange, with --store, gets every line of every check whole
	// (secrets elided), where lines keeps only the current check's, cut.
	exchange io.Writer
}

// exchangeLog is the file of a kept client test with every line exchanged.
const exchangeLog = "exchange.log"

// checkKeepDir refuses a --store that is a file or a directory with
// something in it, before anything is created.
func checkKeepDir(keep string) error {
	if keep == "" {
		return nil
	}
	fi, err := os.Stat(keep)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usage.Errorf("store", "%v", err)
	case !fi.IsDir():
		return usage.Errorf("store", "%s is a file: name a directory that does not exist yet (it is created) or an empty one", keep)
	}
	entries, err := os.ReadDir(keep)
	if err != nil {
		return usage.Errorf("store", "%v", err)
	}
	if len(entries) > 0 {
		return usage.Errorf("store", "%s already holds %s: name a new directory (it is created) or an empty one, so that nothing of an earlier test is taken for this one's", keep, words.Plural(len(entries), "entry"))
	}
	return nil
}

// secretField is a credential in an init line (a database's password,
// the API server's bearer token): elided from what client-test prints.
var secretField = regexp.MustCompile(`"(password|bearer_token)":"[^"]*"`)

func (t *clientTest) record(node string, process int, sent bool, line []byte) {
	dir := "→" // from the client
	if sent {
		dir = "←"
	}
	// Elided before the cut, so a cut cannot leave half a secret.
	text := truncateLine(secretField.ReplaceAllString(strings.TrimRight(string(line), "\n"), `"$1":"…"`))
	t.mu.Lock()
	t.lines = append(t.lines, fmt.Sprintf("%s %s (process %d) %s", dir, node, process, text))
	if t.exchange != nil {
		whole := strings.ToValidUTF8(secretField.ReplaceAllString(strings.TrimRight(string(line), "\n"), `"$1":"…"`), "?")
		fmt.Fprintf(t.exchange, "%s %s %s (process %d) %s\n", time.Now().UTC().Format("15:04:05.000"), dir, node, process, whole)
	}
	t.mu.Unlock()
}

func truncateLine(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// check runs one named check; f returns "" when it passed, else what was
// expected and what happened.
func (t *clientTest) check(name string, f func() string) bool {
	t.mu.Lock()
	t.lines = nil
	if t.exchange != nil {
		fmt.Fprintf(t.exchange, "check: %s\n", name)
	}
	t.mu.Unlock()
	t.checks++
	problem := f()
	if t.exchange != nil {
		t.mu.Lock()
		if problem == "" {
			fmt.Fprintln(t.exchange, "passed")
		} else {
			fmt.Fprintf(t.exchange, "FAILED: %s\n", problem)
		}
		t.mu.Unlock()
	}
	if problem == "" {
		fmt.Fprintf(t.out, "passed  %s\n", name)
		return true
	}
	t.failed++
	fmt.Fprintf(t.out, "FAILED  %s: %s\n", name, problem)
	t.mu.Lock()
	for _, l := range t.lines {
		fmt.Fprintf(t.out, "          %s\n", l)
	}
	t.mu.Unlock()
	return false
}

// outcome describes an op's result for a message.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	typ, text := lockclient.Outcome(err)
	return fmt.Sprintf("%s %q", typ, text)
}

// clientTestLong bounds each op of the client test but the deadline
// check's.
const clientTestLong = 10 * time.Second

// clientSession is the client test going on: the two processes it starts
// and what the first learned.
type clientSession struct {
	ctx           context.Context
	sys           *dockerSystem
	first, second *agent.Remote
	// held: the first process holds the lock on key, with token; value is
	// what it read.
	held  bool
	token uint64
	value int64
}

// clientTestKey is the one key the client test uses.
const clientTestKey = "k0"

func (s *clientSession) opCtx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, d)
}

// open starts a client process in slot.
func (s *clientSession) open(slot, process int) (*agent.Remote, string) {
	c, err := s.sys.NewClient(withProcess(s.ctx, process), slot)
	if err != nil {
		return nil, err.Error()
	}
	return c.(*agent.Remote), ""
}

func (t *clientTest) run(ctx context.Context, sys *dockerSystem) {
	s := &clientSession{ctx: ctx, sys: sys}
	defer func() {
		for _, r := range []*agent.Remote{s.first, s.second} {
			if r != nil {
				r.Close()
			}
		}
	}()
	if !t.check("ready: the client answers init with ready", func() (p string) {
		s.first, p = s.open(1, 0)
		return p
	}) {
		return
	}
	if s.first.SharedClock() {
		fmt.Fprintln(t.out, "        (it answers clock: its CLOCK_MONOTONIC readings are used)")
	} else {
		fmt.Fprintln(t.out, "        (it does not answer clock with the shared clock: its readings are not used; that is allowed)")
	}
	t.oneProcess(s)
	if !t.check("a second process starts (ready) in the other container", func() (p string) {
		s.second, p = s.open(2, 1)
		return p
	}) {
		return
	}
	t.twoProcesses(s)
}

// oneProcess checks the first process's ops alone: acquire, read, a write
// with its checkpoint, the read after it, and an op it does not know.
func (t *clientTest) oneProcess(s *clientSession) {
	const key = clientTestKey
	s.held = t.check("acquire: ok, with a token (0 if the recipe has none)", func() string {
		c, cancel := s.opCtx(clientTestLong)
		defer cancel()
		tok, err := s.first.Acquire(c, key)
		if err != nil {
			return "want ok, got " + outcome(err)
		}
		s.token = tok
		return ""
	})
	t.check("read: ok, with the storage's value", func() string {
		if !s.held {
			return "skipped: no lock"
		}
		c, cancel := s.opCtx(clientTestLong)
		defer cancel()
		v, err := s.first.Read(c, key, s.token)
		if err != nil {
			return "want ok, got " + outcome(err)
		}
		s.value = v
		return ""
	})
	t.check(`write with "stop": the checkpoint "write-checked", then ok after continue`, func() string {
		if !s.held {
			return "skipped: no lock"
		}
		var names []string
		c, cancel := s.opCtx(clientTestLong)
		defer cancel()
		c = backends.WithFailpoint(c, func(name string) { names = append(names, name) })
		err := s.first.Write(c, key, s.token, s.value, s.value+1)
		switch {
		case err != nil:
			return "want ok, got " + outcome(err)
		case len(names) != 1 || names[0] != lockclient.FailpointWriteChecked:
			return fmt.Sprintf(`want one {"type":"checkpoint","name":"write-checked"} before the answer, got %q`, names)
		}
		return ""
	})
	t.check("read after the write: the value written", func() string {
		if !s.held {
			return "skipped: no lock"
		}
		c, cancel := s.opCtx(clientTestLong)
		defer cancel()
		v, err := s.first.Read(c, key, s.token)
		if err != nil || v != s.value+1 {
			return fmt.Sprintf("want ok with value %d, got %s value %d", s.value+1, outcome(err), v)
		}
		return ""
	})
	if read := s.sys.finalReader(); read != nil {
		t.check("the storage itself holds the value written (read by fencecheck, not the client)", func() string {
			if !s.held {
				return "skipped: no lock"
			}
			c, cancel := s.opCtx(clientTestLong)
			defer cancel()
			v, err := read(c, key)
			if err != nil || v != s.value+1 {
				return fmt.Sprintf("want %d, got %d (%v)", s.value+1, v, err)
			}
			return ""
		})
	}
	t.check("unknown op: answered fail", func() string {
		c, cancel := s.opCtx(clientTestLong)
		defer cancel()
		ans, err := s.first.Call(c, lockclient.Request{F: "cas", Key: key})
		if err != nil {
			return "want fail, got " + outcome(err)
		}
		if ans.Type != lockclient.TypeFail {
			return "want fail, got " + ans.Type
		}
		return ""
	})
}

// twoProcesses checks the two processes against each other: the second
// cannot take a lock the first holds, and gets it once released.
func (t *clientTest) twoProcesses(s *clientSession) {
	const key = clientTestKey
	t.check("deadline: the second process's acquire while the first holds the lock answers fail or info within its timeout, never ok", func() string {
		if !s.held {
			return "skipped: the first process holds no lock"
		}
		d := 1500 * time.Millisecond
		c, cancel := s.opCtx(d)
		defer cancel()
		start := time.Now()
		_, err := s.second.Acquire(c, key)
		switch {
		case err == nil:
			return "it answered ok: two processes hold the lock at once"
		case errors.Is(err, agent.ErrAgentGone):
			return fmt.Sprintf("want fail or info before the op's deadline (timeout_ms, here about %s), got no answer in %s: %v",
				d-d/10, time.Since(start).Round(time.Millisecond), err)
		}
		if typ, _ := lockclient.Outcome(err); typ == lockclient.TypeInfo {
			s.second.Close() // unknown: retired, as a run retires it
		}
		return ""
	})
	t.check("release: ok", func() string {
		if !s.held {
			return "skipped: no lock"
		}
		c, cancel := s.opCtx(clientTestLong)
		defer cancel()
		if err := s.first.Release(c, key); err != nil {
			return "want ok, got " + outcome(err)
		}
		return ""
	})
	t.check("after the release the second process gets the lock", func() string {
		c, cancel := s.opCtx(clientTestLong)
		defer cancel()
		r := s.second
		if r.Retired() {
			// The deadline check retired it (an info answer): a new
			// process takes its place, as in a run.
			var p string
			if r, p = s.open(2, 3); p != "" {
				return p
			}
			s.second = r
		}
		tok, err := r.Acquire(c, key)
		if err != nil {
			return "want ok, got " + outcome(err)
		}
		if s.token > 0 && tok <= s.token {
			return fmt.Sprintf("the fencing token went from %d to %d: a later holder's token must be higher", s.token, tok)
		}
		rc, cancel2 := s.opCtx(clientTestLong)
		defer cancel2()
		if err := r.Release(rc, key); err != nil {
			return "its release: want ok, got " + outcome(err)
		}
		return ""
	})
}
