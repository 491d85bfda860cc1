package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/harness/agent"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/runstore"
)

// dockerSystem is the system under test in containers: the lock service's
// servers on n1..nN, the storage node, and one container per client slot
// running `check agent` processes (or the backend's own agent program's).
type dockerSystem struct {
	t *Test
	// nodes are the test's machines, as the servers, the clients and the
	// faults reach them; cluster is the same containers as the Docker
	// driver knows them, for what only it does (keep a cluster warm).
	nodes   nodes.Nodes
	cluster *engine.Cluster
	db      backends.DB
	// servers are the lock service's nodes, n1..nN.
	servers []string
	spec    backends.ClientSpec
	image   string
	// clientImage is the --client program's image, or "".
	clientImage string
	// own is the storage the --client program writes with its own fence
	// check, or nil; ownInit is its part of the init message.
	own     *registry.ClientStorage
	ownInit lockclient.Storage
	// trace, when set, sees every protocol line (check client-test).
	trace func(node string, process int, sent bool, line []byte)
	logf  func(string, ...any)
	dir   runstore.Run
	// st is the run's state; warmKey, when not "", lets Close give the
	// cluster back to st.clusters after a clean run.
	st      *runState
	warmKey string
	// hosts, on a run on the user's hosts (--hosts), are nodes as the
	// SSH driver that records what it copied in (hosts.go); nil on
	// Docker.
	hosts *installedHosts
}

// NewClient starts an agent process in the slot's container: the
// built-in `check agent` (or the backend's own agent program, beside it
// in the node, when its clients run in one: registry.Info.Agent), or the
// --client program.
func (s *dockerSystem) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	node := history.SlotName(slot)
	process := processOf(ctx, slot)
	init := s.initFor(node, process)
	cmd := []string{nodes.BinaryPath, "agent"}
	if a := s.t.info.Agent; a != nil {
		cmd = []string{nodes.ProgramPath(a.Name), "agent"}
	}
	opts := nodes.ExecOptions{}
	who := fmt.Sprintf("the agent in %s (process %d)", node, process)
	if cl := s.t.client; cl != nil {
		cmd = cl.Manifest.Command
		opts.WorkDir = "/client"
		who = fmt.Sprintf("client %s in %s (process %d)", cl.Manifest.Name, node, process)
	} else {
		// The spec goes in on stdin, not argv: it may carry a password.
		spec := s.spec
		spec.Process = process
		spec.Endpoints = EndpointsOf(s.t.cfg.ClientEndpoints, s.spec.Endpoints, process)
		b, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		init.Builtin = b
	}
	// No pause until the agent has answered: one frozen half way through
	// its start would fail the slot.
	defer s.nodes.HoldOffPause(node)()
	st, err := s.nodes.ExecStreamWith(context.WithoutCancel(ctx), node, cmd, opts)
	if err != nil {
		return nil, err
	}
	stderr := newTail(4 << 10)
	stderrDone := make(chan struct{})
	go func() {
		s.keepStderr(who, io.TeeReader(st.Stderr, stderr))
		close(stderrDone)
	}()
	// tail waits briefly for the program's last words (a traceback
	// written as it dies) and returns the end of its stderr.
	tail := func() string {
		select {
		case <-stderrDone:
		case <-time.After(time.Second):
		}
		if t := stderr.String(); t != "" {
			return "; its stderr ends:\n" + indent(t)
		}
		return "; it wrote nothing on stderr"
	}
	stop := func() error {
		st.Stdin.Close()
		return st.Close()
	}
	sctx, cancel := context.WithTimeout(ctx, agent.ReadyTimeout)
	defer cancel()
	var trace func(bool, []byte)
	if s.trace != nil {
		trace = func(sent bool, line []byte) { s.trace(node, process, sent, line) }
	}
	r, err := agent.NewTracedRemote(sctx, st.Stdin, st.Stdout, stop, init, trace)
	if err != nil {
		return nil, fmt.Errorf("%s did not start: %v%s", who, err, tail())
	}
	r.Gone = func(err error) {
		go func() { s.logf("%s given up: %v%s", who, err, tail()) }()
	}
	return r, nil
}

// initFor is the init message of a process in node: everything a client
// needs, credentials included where the backend has them.
func (s *dockerSystem) initFor(node string, process int) lockclient.Init {
	eps := EndpointsOf(s.t.cfg.ClientEndpoints, s.spec.Endpoints, process)
	init := lockclient.Init{Process: process, Node: node,
		Service:    lockclient.Service{Backend: s.t.cfg.Backend, Endpoints: eps, Servers: serversOf(eps)},
		Storage:    lockclient.Storage{Backend: s.t.cfg.Storage, URL: s.spec.StorageURL, Fencing: s.t.cfg.Fencing},
		LeaseTTLMs: s.t.cfg.LeaseTTL.Milliseconds()}
	if s.own != nil {
		init.Storage = s.ownInit
	}
	for k := 0; k < s.t.cfg.Keys; k++ {
		init.Keys = append(init.Keys, keyName(k))
	}
	if c, ok := s.db.(backends.Credentialed); ok && s.t.client != nil {
		init.Service.User, init.Service.Password = c.Credentials()
	}
	if b, ok := s.db.(backends.BearerAuthed); ok && s.t.client != nil {
		init.Service.BearerToken, init.Service.CA = b.BearerAuth()
	}
	return init
}

// prepareClientStorage readies the storage the --client program writes
// with its own fence check (a row per key) and keeps its part of init,
// made from the clients' spec (the service's endpoints, the storage's
// address and secret).
func (s *dockerSystem) prepareClientStorage(ctx context.Context, cs *registry.ClientStorage) error {
	var keys []string
	for k := 0; k < s.t.cfg.Keys; k++ {
		keys = append(keys, keyName(k))
	}
	if cs.Prepare != nil {
		if err := cs.Prepare(ctx, s.nodes, keys); err != nil {
			return fmt.Errorf("readying the storage (%s) for the client: %w", s.t.cfg.Storage, err)
		}
	}
	s.own, s.ownInit = cs, cs.Describe(s.spec.StorageURL, s.spec.Secret, s.spec.Endpoints)
	s.logf("storage %s: the client writes it with its own fence check; fencecheck reads the final values itself", s.t.cfg.Storage)
	return nil
}

// finalReader, when the --client program writes a storage with its own
// fence check, reads a key's value straight from that storage, so the
// final reads do not take the program's word for what it holds.
func (s *dockerSystem) finalReader() func(ctx context.Context, key string) (int64, error) {
	if s.own == nil {
		return nil
	}
	return func(ctx context.Context, key string) (int64, error) {
		return s.own.Read(ctx, s.nodes, s.spec.Endpoints, key)
	}
}

// serversOf reads host and port from each endpoint, in whichever form the
// backend's clients take it (n1:2181, http://n1:2379, postgres://u@n1:5432/db).
func serversOf(endpoints []string) []lockclient.Server {
	var out []lockclient.Server
	for _, e := range endpoints {
		hostport := e
		if u, err := url.Parse(e); err == nil && u.Host != "" {
			hostport = u.Host
		}
		host, port, err := net.SplitHostPort(hostport)
		if err != nil {
			continue
		}
		p, _ := strconv.Atoi(port)
		out = append(out, lockclient.Server{Node: host, Host: host, Port: p})
	}
	return out
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// tail keeps the last n bytes written to it.
type tail struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.n {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.n:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "?")
}

// keepStderr appends an agent's stderr (a panic, a Go runtime error, a
// client's logs) to logs/agents.log in the run directory.
func (s *dockerSystem) keepStderr(who string, r io.Reader) {
	b, _ := io.ReadAll(io.LimitReader(r, 1<<20))
	io.Copy(io.Discard, r)
	if len(b) == 0 {
		return
	}
	s.dir.MakeLogs()
	f, err := os.OpenFile(s.dir.AgentsLog(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "--- %s\n%s\n", who, b)
}

func (s *dockerSystem) Freezer() nemesis.Freezer { return nodeFreezer{s.nodes} }

func (s *dockerSystem) Info() map[string]string {
	if s.hosts != nil {
		return s.hostsInfo()
	}
	info := map[string]string{"docker test id": s.nodes.ID(), "image": s.image, "docker cluster": "new"}
	if s.st != nil && s.st.reused {
		info["docker cluster"] = "warm: an earlier run's, its processes killed and its data removed before this run"
	}
	if s.clientImage != "" {
		info["client image"] = s.clientImage
	}
	for k, v := range s.db.Info() {
		info[k] = v
	}
	return info
}

// Close collects every node's logs into the run directory and removes the
// cluster.
//
// Every node is resumed first (the last heal); a node that cannot be is
// named in the error, and its logs are not asked for (a daemon that does
// not answer about it would make each request wait its whole bound).
func (s *dockerSystem) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if s.hosts != nil {
		return s.closeHosts(ctx)
	}
	errs := s.resumeAndCollectLogs(ctx)
	if s.warmKey != "" && s.st.keepWarm && len(errs) == 0 {
		if kept, evicted := s.st.clusters.give(s.warmKey, s.cluster); kept {
			s.st.pooled = true
			s.logf("cluster %s kept warm for the next run", s.cluster.TestID)
			if evicted != nil {
				s.logf("cluster %s, idle longest, removed (in the background) to keep the warm clusters within their number", evicted.TestID)
				s.st.clusters.evict(evicted)
			}
			return nil
		}
	}
	if s.t.cfg.KeepCluster {
		s.logf("cluster %s kept (--keep-cluster): docker exec -it %s bash; remove it with: check cluster down --id %s",
			s.cluster.TestID, engine.ContainerName(s.cluster.TestID, "n1"), s.cluster.TestID)
		return errors.Join(errs...)
	}
	if err := s.nodes.Down(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// leftoverHint says how to remove what a Docker run left behind: empty
// when the daemon confirms that nothing of testID is left, else a line
// naming the command (also when the daemon cannot be asked).
func leftoverHint(testID string, keep bool) string {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cli, err := engine.Connect(ctx)
	var left []engine.Leftover
	if err == nil {
		left, err = engine.List(ctx, cli, testID)
		cli.Close()
	}
	switch {
	case err != nil:
		return fmt.Sprintf("test %s may have left containers behind, and the Docker daemon cannot say (%v); once it answers, remove them with: check cluster down --id %s",
			testID, err, testID)
	case len(left) == 0 || keep:
		return ""
	}
	return fmt.Sprintf("test %s left %d Docker objects behind (%s); remove them with: check cluster down --id %s",
		testID, len(left), left[0], testID)
}

// nodeFreezer pauses whole nodes with the cgroup freezer.
type nodeFreezer struct{ n nodes.Nodes }

func (f nodeFreezer) Freeze(ctx context.Context, node string) error { return f.n.Pause(ctx, node) }
func (f nodeFreezer) Thaw(ctx context.Context, node string) error   { return f.n.Unpause(ctx, node) }

// resumeAndCollectLogs is how every run ends on its machines, containers
// or hosts: every node resumed (a frozen one named in the errors), then
// the logs of each node that could be copied from.
func (s *dockerSystem) resumeAndCollectLogs(ctx context.Context) []error {
	var errs []error
	stuck := map[string]bool{}
	for _, n := range s.nodes.All() {
		if err := s.nodes.Unpause(ctx, n.Name); err != nil {
			stuck[n.Name] = true
			errs = append(errs, fmt.Errorf("could not resume %s: %w", n.Name, err))
		}
	}
	paths := map[string][]string{}
	for _, n := range s.nodes.All() {
		paths[n.Name] = []string{backends.LogDir}
		if s.db != nil {
			paths[n.Name] = append(paths[n.Name], s.db.LogFiles()...)
		}
	}
	if err := s.nodes.CollectLogsExcept(ctx, s.dir.Logs(), paths, stuck); err != nil {
		s.logf("collecting logs: %v", err)
	}
	return errs
}
