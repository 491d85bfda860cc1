package harness

import (
	"context"
	"debug/elf"
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

	"github.com/docker/docker/client"
	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/harness/agent"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/runstore"
)

// dockerSystem is the system under test in containers: the lock service's
// servers on n1..nN, the storage node, and one container per client slot
// running `check agent` processes.
type dockerSystem struct {
	cfg     *Config
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
}

// testID names the cluster's Docker objects: short, unique, valid. Two
// runs of one process that start in the same millisecond (parallel tests,
// a compare's streams) get distinct ids: the second takes a suffix, -2,
// -3, …, instead of finding the first one's containers in its way.
func testID(cfg *Config, started time.Time) string {
	base := fmt.Sprintf("%s-%s", strings.ToLower(cfg.Backend), started.UTC().Format("150405.000"))
	issuedIDs.Lock()
	defer issuedIDs.Unlock()
	if issuedIDs.seen == nil {
		issuedIDs.seen = map[string]bool{}
	}
	id := base
	for n := 2; issuedIDs.seen[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	issuedIDs.seen[id] = true
	return id
}

// issuedIDs are the test ids this process has handed out.
var issuedIDs struct {
	sync.Mutex
	seen map[string]bool
}

// agentBinary is the check binary to copy into the nodes.
func agentBinary(cfg *Config) (string, error) {
	path := cfg.AgentBinary
	if path == "" {
		path = os.Getenv("FENCECHECK_BINARY")
	}
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding the check binary to run in the containers: %w (set FENCECHECK_BINARY)", err)
		}
		path = exe
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s cannot run in the containers: %v (build it with CGO_ENABLED=0 go build -o check ./cmd/check, or set FENCECHECK_BINARY)", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 && f.Machine != elf.EM_AARCH64 {
		return "", fmt.Errorf("%s is built for %s, not for the containers", path, f.Machine)
	}
	return path, nil
}

// agentMatchesEngine refuses an agent binary built for another
// architecture than the engine's (a remote engine may differ from this
// host), before anything is created.
func agentMatchesEngine(ctx context.Context, cli *client.Client, bin string) error {
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return fmt.Errorf("asking the Docker engine at %s for its architecture: %w", cli.DaemonHost(), err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[ver.Arch]
	if want != 0 && f.Machine != want {
		return fmt.Errorf("%s is built for %s, but the Docker engine at %s runs %s: build it for the engine with CGO_ENABLED=0 GOARCH=%s go build -o check-%s ./cmd/check and set FENCECHECK_BINARY to it",
			bin, f.Machine, cli.DaemonHost(), ver.Arch, ver.Arch, ver.Arch)
	}
	return nil
}

// coreImageEnough: the run's servers and storage need only the core node
// image, so a first run does not wait for Debian's servers.
func coreImageEnough(b registry.Info, cfg *Config, s registry.Setup) bool {
	if b.CoreImage == nil || !b.CoreImage(s) {
		return false
	}
	k, shared := registry.Storage(cfg.Storage)
	return !shared || k.CoreImage
}

func openDocker(ctx context.Context, cfg *Config, st *runState, dir runstore.Run, logf func(string, ...any), progress io.Writer) (*dockerSystem, error) {
	b, _ := registry.Lookup(cfg.Backend)
	if b.NewDB == nil {
		return nil, fmt.Errorf("backend %s cannot run in Docker", cfg.Backend)
	}
	id := st.testID
	if id == "" {
		id = testID(cfg, time.Now())
	}
	db, servers, err := b.NewDB(cfg.setup(id))
	if err != nil {
		return nil, err
	}
	bin, err := agentBinary(cfg)
	if err != nil {
		return nil, err
	}
	cli, err := engine.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := agentMatchesEngine(ctx, cli, bin); err != nil {
		cli.Close()
		return nil, err
	}
	st.phase("image")
	// The images and compiles a run may need print one line per step
	// (the tools' output in a log file) unless --verbose-build.
	build := images.NewBuildOutput(progress, images.BuildOutputOptions{Verbose: cfg.VerboseBuild, LogDir: images.BuildLogDir()})
	defer build.Close()
	progress = build
	ensureImage := images.EnsureImage
	if coreImageEnough(b, cfg, cfg.setup(id)) {
		ensureImage = images.EnsureCoreImage
	}
	image, err := ensureImage(ctx, cli, progress)
	if err != nil {
		return nil, fmt.Errorf("the node image: %w", err)
	}
	if p, ok := db.(backends.Preparer); ok {
		ver, err := cli.ServerVersion(ctx)
		if err != nil {
			return nil, fmt.Errorf("asking the Docker engine at %s for its architecture: %w", cli.DaemonHost(), err)
		}
		if err := p.Prepare(ctx, ver.Arch, progress); err != nil {
			return nil, fmt.Errorf("preparing %s: %w", cfg.Backend, err)
		}
	}
	if b.Notes != nil {
		for _, note := range b.Notes(cfg.setup(id)) {
			logf("%s", note)
		}
	}
	clientImage := ""
	if cfg.client != nil {
		clientImage, err = images.EnsureClientImage(ctx, cli, image, cfg.client, progress)
		if err != nil {
			return nil, fmt.Errorf("the image of client %s: %w", cfg.client.Manifest.Name, err)
		}
		logf("client %s (%s, manifest hash %s): image %s", cfg.client.Manifest.Name, cfg.ClientDir, cfg.client.Hash(), clientImage)
	}
	start := time.Now()
	st.phase("cluster")
	st.clusterAsked = true
	spec := engine.Spec{TestID: id, Image: image, Servers: servers, Storage: true, Clients: cfg.Clients, Binary: bin, ClientImage: clientImage, ServerImage: cfg.ServerImage}
	key := warmKey(cfg, st, spec)
	cl, err := upCluster(ctx, cli, spec, st, key, logf)
	if err != nil {
		return nil, err
	}
	if cl.TestID != id {
		// A warm cluster: the servers take its id (etcd's cluster token).
		id, st.testID = cl.TestID, cl.TestID
		if db, _, err = b.NewDB(cfg.setup(id)); err != nil {
			return nil, err
		}
	}
	logf("cluster %s: %s, storage, %s (image %s)", id, words.Plural(servers, "server node"), words.Plural(cfg.Clients, "client"), image)
	if cfg.ServerImage != "" {
		logf("lock servers from image %s, each in a container of its own that shares its node's network namespace; faults are applied from the node containers and the engine", cfg.ServerImage)
	}
	var nodes []string
	for i := 1; i <= servers; i++ {
		nodes = append(nodes, fmt.Sprintf("n%d", i))
	}
	s := &dockerSystem{cfg: cfg, cluster: cl, db: db, servers: nodes, image: image, clientImage: clientImage, logf: logf, dir: dir, st: st, warmKey: key}
	st.phase("servers")
	// A fault that must be in place when each server starts (the first
	// time and after a kill) prepares the nodes now.
	fenv := &nemesis.Env{Freezer: s.Freezer()}
	s.describeTo(fenv)
	if err := nemesis.Prepare(ctx, cfg.Nemesis, fenv); err != nil {
		s.Close(context.Background())
		return nil, err
	}
	if err := db.Setup(ctx, cl, nodes); err != nil {
		s.Close(context.Background())
		return nil, fmt.Errorf("starting %s: %w", cfg.Backend, err)
	}
	var url, secret string
	if k, ok := registry.Storage(cfg.Storage); ok {
		url, secret, err = k.Start(ctx, cl, cfg.setup(id))
		if err != nil {
			s.Close(context.Background())
			return nil, fmt.Errorf("starting the storage (%s) in the storage node: %w", cfg.Storage, err)
		}
	}
	if cs := cfg.clientStorage(); cs != nil {
		if err := s.prepareClientStorage(ctx, cs, url, secret, db.Endpoints()); err != nil {
			s.Close(context.Background())
			return nil, err
		}
	}
	s.spec = backends.ClientSpec{Backend: cfg.Backend, Recipe: cfg.Recipe, Storage: cfg.Storage, Fencing: cfg.Fencing,
		LeaseTTL: cfg.LeaseTTL, LeaseCheck: cfg.LeaseCheck, Endpoints: db.Endpoints(), StorageURL: url, Secret: secret}
	if cs, ok := db.(backends.ClientSecreter); ok {
		s.spec.ServiceSecret = cs.ClientSecret()
	}
	logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
	return s, nil
}

// NewClient starts an agent process in the slot's container: the
// built-in `check agent`, or the --client program.
func (s *dockerSystem) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	node := history.SlotName(slot)
	process := processOf(ctx, slot)
	init := s.initFor(node, process)
	cmd := []string{engine.BinaryPath, "agent"}
	opts := engine.ExecOptions{}
	who := fmt.Sprintf("the agent in %s (process %d)", node, process)
	if cl := s.cfg.client; cl != nil {
		cmd = cl.Manifest.Command
		opts.WorkDir = "/client"
		who = fmt.Sprintf("client %s in %s (process %d)", cl.Manifest.Name, node, process)
	} else {
		// The spec goes in on stdin, not argv: it may carry a password.
		spec := s.spec
		spec.Process = process
		spec.Endpoints = EndpointsOf(s.cfg.ClientEndpoints, s.spec.Endpoints, process)
		b, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		init.Builtin = b
	}
	// No pause until the agent has answered: one frozen half way through
	// its start would fail the slot.
	defer s.cluster.HoldOffPause(node)()
	st, err := s.cluster.ExecStreamWith(context.WithoutCancel(ctx), node, cmd, opts)
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
	eps := EndpointsOf(s.cfg.ClientEndpoints, s.spec.Endpoints, process)
	init := lockclient.Init{Process: process, Node: node,
		Service:    lockclient.Service{Backend: s.cfg.Backend, Endpoints: eps, Servers: serversOf(eps)},
		Storage:    lockclient.Storage{Backend: s.cfg.Storage, URL: s.spec.StorageURL, Fencing: s.cfg.Fencing},
		LeaseTTLMs: s.cfg.LeaseTTL.Milliseconds()}
	if s.own != nil {
		init.Storage = s.ownInit
	}
	for k := 0; k < s.cfg.Keys; k++ {
		init.Keys = append(init.Keys, keyName(k))
	}
	if c, ok := s.db.(backends.Credentialed); ok && s.cfg.client != nil {
		init.Service.User, init.Service.Password = c.Credentials()
	}
	if b, ok := s.db.(backends.BearerAuthed); ok && s.cfg.client != nil {
		init.Service.BearerToken, init.Service.CA = b.BearerAuth()
	}
	return init
}

// prepareClientStorage readies the storage the --client program writes
// with its own fence check (a row per key) and keeps its part of init.
func (s *dockerSystem) prepareClientStorage(ctx context.Context, cs *registry.ClientStorage, url, secret string, endpoints []string) error {
	var keys []string
	for k := 0; k < s.cfg.Keys; k++ {
		keys = append(keys, keyName(k))
	}
	if cs.Prepare != nil {
		if err := cs.Prepare(ctx, s.cluster, keys); err != nil {
			return fmt.Errorf("readying the storage (%s) for the client: %w", s.cfg.Storage, err)
		}
	}
	s.own, s.ownInit = cs, cs.Describe(url, secret, endpoints)
	s.logf("storage %s: the client writes it with its own fence check; fencecheck reads the final values itself", s.cfg.Storage)
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
		return s.own.Read(ctx, s.cluster, s.spec.Endpoints, key)
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

func (s *dockerSystem) Freezer() nemesis.Freezer { return containerFreezer{s.cluster} }

func (s *dockerSystem) Info() map[string]string {
	info := map[string]string{"docker test id": s.cluster.TestID, "image": s.image, "docker cluster": "new"}
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
	var errs []error
	stuck := map[string]bool{}
	for _, n := range s.cluster.Nodes {
		if err := s.cluster.Unpause(ctx, n.Name); err != nil {
			stuck[n.Name] = true
			errs = append(errs, fmt.Errorf("could not resume %s: %w", n.Name, err))
		}
	}
	paths := map[string][]string{}
	for _, n := range s.cluster.Nodes {
		paths[n.Name] = append([]string{backends.LogDir}, s.db.LogFiles()...)
	}
	if err := s.cluster.CollectLogsExcept(ctx, s.dir.Logs(), paths, stuck); err != nil {
		s.logf("collecting logs: %v", err)
	}
	if s.warmKey != "" && s.st.keepWarm && len(errs) == 0 {
		if kept, evicted := s.st.clusters.give(s.warmKey, s.cluster); kept {
			s.st.pooled = true
			s.logf("cluster %s kept warm for the next run", s.cluster.TestID)
			if evicted != nil {
				s.logf("cluster %s, idle longest, removed to keep the warm clusters within one per slot", evicted.TestID)
				if err := evicted.Down(ctx); err != nil {
					s.logf("removing cluster %s: %v (check cluster down --id %s)", evicted.TestID, err, evicted.TestID)
				}
			}
			return nil
		}
	}
	if s.cfg.KeepCluster {
		s.logf("cluster %s kept (--keep-cluster): docker exec -it %s bash; remove it with: check cluster down --id %s",
			s.cluster.TestID, engine.ContainerName(s.cluster.TestID, "n1"), s.cluster.TestID)
		return errors.Join(errs...)
	}
	if err := s.cluster.Down(ctx); err != nil {
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

// containerFreezer pauses whole containers with the cgroup freezer.
type containerFreezer struct{ c *engine.Cluster }

func (f containerFreezer) Freeze(ctx context.Context, node string) error { return f.c.Pause(ctx, node) }
func (f containerFreezer) Thaw(ctx context.Context, node string) error   { return f.c.Unpause(ctx, node) }
