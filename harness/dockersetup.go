package harness

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/client"
	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/runstore"
)

// systemSetup is what setting up a run's system needs besides the
// context: the test, the run's state (its test id and phases, the warm
// clusters it may take), its directory, its log and where the output of
// image builds goes.
type systemSetup struct {
	t    *Test
	st   *runState
	dir  runstore.Run
	logf func(string, ...any)
	// record writes a line to check.log only (the image steps' lines,
	// which the build output prints to the terminal itself).
	record   func(string)
	progress io.Writer
}

// dockerParts is what a Docker system is made of before its cluster is
// up: the backend's servers, the agent binary, the engine, the images.
type dockerParts struct {
	db          backends.DB
	servers     int
	bin         string
	cli         *client.Client
	image       string
	clientImage string
	// programs are the binaries the nodes carry beside bin: the
	// backend's own agent program (registry.Info.Agent), if it has one.
	programs []engine.Program
}

// openDocker sets up the test's Docker system: the images, the cluster
// (a warm one where the run may take it), the servers, the storage and
// the clients' spec.
func (s systemSetup) openDocker(ctx context.Context) (*dockerSystem, error) {
	t, st := s.t, s.st
	cfg, b := &t.cfg, t.info
	if b.NewDB == nil {
		return nil, fmt.Errorf("backend %s cannot run in Docker", cfg.Backend)
	}
	id := st.testID
	if id == "" {
		id = testID(cfg, time.Now())
	}
	p, err := s.dockerParts(ctx, id)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	st.phase("cluster")
	st.clusterAsked = true
	spec := engine.Spec{TestID: id, Image: p.image, Servers: p.servers, Storage: true, Clients: cfg.Clients, Binary: p.bin, Programs: p.programs,
		ClientImage: p.clientImage, ServerImage: cfg.ServerImage}
	key := warmKey(cfg, st, spec)
	cl, err := s.upCluster(ctx, p.cli, spec, key)
	if err != nil {
		return nil, err
	}
	if cl.TestID != id {
		// A warm cluster: the servers take its id (etcd's cluster token).
		id, st.testID = cl.TestID, cl.TestID
		if p.db, _, err = b.NewDB(t.setup(id)); err != nil {
			return nil, err
		}
	}
	s.logf("cluster %s: %s, storage, %s (image %s)", id, words.Plural(p.servers, "server node"), words.Plural(cfg.Clients, "client"), p.image)
	if cfg.ServerImage != "" {
		s.logf("lock servers from image %s, each in a container of its own that shares its node's network namespace; faults are applied from the node containers and the engine", cfg.ServerImage)
	}
	var nodes []string
	for i := 1; i <= p.servers; i++ {
		nodes = append(nodes, fmt.Sprintf("n%d", i))
	}
	ds := &dockerSystem{t: t, nodes: cl, cluster: cl, db: p.db, servers: nodes, image: p.image, clientImage: p.clientImage, logf: s.logf, dir: s.dir, st: st, warmKey: key}
	st.phase("servers")
	if err := ds.start(ctx, id); err != nil {
		ds.Close(context.Background())
		return nil, err
	}
	s.logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
	return ds, nil
}

// dockerParts asks the backend for its servers, finds the agent binary,
// connects to the engine and makes sure of the images the run needs:
// everything before the cluster is asked for.
func (s systemSetup) dockerParts(ctx context.Context, id string) (dockerParts, error) {
	t := s.t
	cfg, b := &t.cfg, t.info
	var p dockerParts
	var err error
	if p.db, p.servers, err = b.NewDB(t.setup(id)); err != nil {
		return p, err
	}
	if p.bin, err = agentBinary(cfg); err != nil {
		return p, err
	}
	if p.cli, err = engine.Connect(ctx); err != nil {
		return p, err
	}
	if err := agentMatchesEngine(ctx, p.cli, p.bin); err != nil {
		p.cli.Close()
		return p, err
	}
	s.st.phase("image")
	// The images and compiles a run may need print one line per step
	// (the tools' output in a log file) unless --verbose-build.
	build := images.NewBuildOutput(s.progress, images.BuildOutputOptions{Verbose: cfg.VerboseBuild, LogDir: images.BuildLogDir(), Record: s.record})
	defer build.Close()
	if p.image, err = t.ensureNodeImage(ctx, p.cli, t.setup(id), build); err != nil {
		return p, fmt.Errorf("the node image: %w", err)
	}
	if err := s.prepareBackend(ctx, p, build); err != nil {
		return p, err
	}
	if p.programs, err = s.agentPrograms(ctx, p, build); err != nil {
		return p, err
	}
	if b.Notes != nil {
		for _, note := range b.Notes(t.setup(id)) {
			s.logf("%s", note)
		}
	}
	if cl := t.client; cl != nil {
		if p.clientImage, err = images.EnsureClientImage(ctx, p.cli, p.image, cl, build); err != nil {
			return p, fmt.Errorf("the image of client %s: %w", cl.Manifest.Name, err)
		}
		s.logf("client %s (%s, manifest hash %s): image %s", cl.Manifest.Name, cfg.ClientDir, cl.Hash(), p.clientImage)
	}
	return p, nil
}

// prepareBackend lets a backend that builds or fetches something for the
// engine's architecture first (backends.Preparer) do it.
func (s systemSetup) prepareBackend(ctx context.Context, p dockerParts, build io.Writer) error {
	pr, ok := p.db.(backends.Preparer)
	if !ok {
		return nil
	}
	arch, err := engineArch(ctx, p.cli)
	if err != nil {
		return err
	}
	if err := pr.Prepare(ctx, arch, build); err != nil {
		return fmt.Errorf("preparing %s: %w", s.t.cfg.Backend, err)
	}
	return nil
}

// agentPrograms gets, for a backend whose built-in clients run in a
// program of their own (registry.Info.Agent), that program for the
// engine's architecture, made for the check binary going into the nodes
// (images.AgentProgramBinary: this process's memory, the user's cache, a
// copy beside the check binary, or compiled now): in the image phase,
// before any container exists, so a compile shows as a step and a
// failure leaves nothing behind. A --client run runs its own program and
// needs none.
func (s systemSetup) agentPrograms(ctx context.Context, p dockerParts, build io.Writer) ([]engine.Program, error) {
	a := s.t.info.Agent
	if a == nil || s.t.client != nil {
		return nil, nil
	}
	arch, err := engineArch(ctx, p.cli)
	if err != nil {
		return nil, err
	}
	b, err := images.AgentProgramBinary(ctx, images.AgentProgram{Name: a.Name, Package: a.Package, What: a.What}, p.bin, arch, build)
	if err != nil {
		return nil, fmt.Errorf("backend %s's clients: %w", s.t.cfg.Backend, err)
	}
	s.logf("clients run in %s, %s (linux/%s, %.0f MB, %s)", a.Name, a.What, arch, float64(len(b.Data))/1e6, b.From)
	return []engine.Program{{Path: engine.ProgramPath(a.Name), Data: b.Data}}, nil
}

// engineArch is the Docker engine's architecture (amd64, arm64): what the
// binaries put in its nodes must be built for.
func engineArch(ctx context.Context, cli *client.Client) (string, error) {
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("asking the Docker engine at %s for its architecture: %w", cli.DaemonHost(), err)
	}
	return ver.Arch, nil
}

// start readies the cluster for the run: the faults that must be in
// place when each server starts, the lock service, the storage (and the
// --client program's own), and the clients' spec.
func (s *dockerSystem) start(ctx context.Context, id string) error {
	t := s.t
	cfg := &t.cfg
	// A fault that must be in place when each server starts (the first
	// time and after a kill) prepares the nodes now.
	fenv := &nemesis.Env{Freezer: s.Freezer()}
	s.describeTo(fenv)
	if err := t.kinds.Prepare(ctx, fenv); err != nil {
		return err
	}
	// --power-layer with no power fault: the layer alone (a power fault
	// laid it already).
	if cfg.PowerLayer && !nemesis.LaysPowerLayer(cfg.Nemesis, cfg.Options) {
		if err := nemesis.LayPowerLayer(ctx, fenv); err != nil {
			return err
		}
	}
	if err := s.db.Setup(ctx, s.nodes, s.servers); err != nil {
		return fmt.Errorf("starting %s: %w", cfg.Backend, err)
	}
	var url, secret string
	if k, ok := registry.Storage(cfg.Storage); ok {
		var err error
		if url, secret, err = k.Start(ctx, s.nodes, t.setup(id)); err != nil {
			return fmt.Errorf("starting the storage (%s) in the storage node: %w", cfg.Storage, err)
		}
	}
	s.spec = backends.ClientSpec{Backend: cfg.Backend, Recipe: cfg.Recipe, Storage: cfg.Storage, Fencing: cfg.Fencing,
		LeaseTTL: cfg.LeaseTTL, LeaseCheck: cfg.LeaseCheck, Endpoints: s.db.Endpoints(), StorageURL: url, Secret: secret}
	if cs := t.own; cs != nil {
		if err := s.prepareClientStorage(ctx, cs); err != nil {
			return err
		}
	}
	if cs, ok := s.db.(backends.ClientSecreter); ok {
		s.spec.ServiceSecret = cs.ClientSecret()
	}
	return nil
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

// ensureNodeImage makes sure of the node image a run of t with setup s
// runs on, the core image where it is enough, and returns its tag.
func (t *Test) ensureNodeImage(ctx context.Context, cli *client.Client, s registry.Setup, out io.Writer) (string, error) {
	if coreImageEnough(t.info, &t.cfg, s) {
		return images.EnsureCoreImage(ctx, cli, out)
	}
	return images.EnsureImage(ctx, cli, out)
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
