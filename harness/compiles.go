package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/images"
)

// CompileAll compiles now, for the engine's architecture, everything a
// Docker run would otherwise compile on first use: every server build a
// backend prepares before its cluster exists (backends.Preparer: etcd 3.5
// and 3.7, kube-apiserver, …) and every backend's own agent program
// (registry.Info.Agent) for the check binary that runs the tests, and
// the exact releases the tests run (registry.Releases.Prepared), and the
// failpoint builds they run (registry.Failpoints.Prepared). Each
// compile is a step of out, and each lands in the user's cache, where
// every later run and test finds it: `check image build --all` calls it,
// so CI pays each compile once, up front, in a line with its time.
// It names no backend: a new backend's compile is here when its DB is a
// Preparer.
func CompileAll(ctx context.Context, cli *client.Client, out io.Writer) error {
	arch, err := engineArch(ctx, cli)
	if err != nil {
		return err
	}
	// The backends that compile fast first, then those that say their
	// compiles take many minutes (registry.Info.CompileLast): on a fresh
	// machine kube-apiserver's 15 minutes went before nats-server's, and
	// the NATS tests compiled it themselves meanwhile.
	var order []registry.Info
	for _, last := range []bool{false, true} {
		for _, b := range registry.All() {
			if b.NewDB != nil && b.CompileLast == last {
				order = append(order, b)
			}
		}
	}
	// Each backend's own versions first, every backend's; then the exact
	// releases and failpoint builds only a few tests run (on a fresh
	// machine etcd's five of them took 25 minutes, and nats-server's
	// compile, which every NATS test needs, waited behind them).
	for _, b := range order {
		// The agent program before the servers: it is built in
		// fencecheck's own module, as the example clients' go_build is,
		// so a client on client-go built beside the server compiles
		// finds client-go already compiled instead of compiling it at
		// the same time.
		if a := b.Agent; a != nil {
			bin, err := agentBinary(&Config{})
			if err != nil {
				return err
			}
			if _, err := images.AgentProgramBinary(ctx, images.AgentProgram{Name: a.Name, Package: a.Package, What: a.What}, bin, arch, out); err != nil {
				return fmt.Errorf("backend %s's clients: %w", b.Name, err)
			}
		}
		if err := compileServers(ctx, b, arch, out, false); err != nil {
			return err
		}
	}
	for _, b := range order {
		if err := compileServers(ctx, b, arch, out, true); err != nil {
			return err
		}
	}
	return nil
}

// compileServers compiles the server builds of backend b a Docker run
// prepares before its cluster exists: without extras its versions; with
// them the exact releases and the failpoint builds the tests run.
func compileServers(ctx context.Context, b registry.Info, arch string, out io.Writer, extras bool) error {
	type build struct {
		version    string
		failpoints bool
	}
	var builds []build
	if !extras {
		versions := b.Versions
		if len(versions) == 0 {
			versions = []string{registry.DefaultVersion}
		}
		for _, v := range versions {
			builds = append(builds, build{version: v})
		}
	} else {
		if b.Releases != nil {
			for _, v := range b.Releases.Prepared {
				builds = append(builds, build{version: v})
			}
		}
		if b.Failpoints != nil {
			for _, v := range b.Failpoints.Prepared {
				builds = append(builds, build{version: v, failpoints: true})
			}
		}
	}
	for _, x := range builds {
		setup := registry.Setup{Recipe: b.Recipes[0], ServerVersion: x.version, Nodes: 3, LeaseTTL: 2 * time.Second}
		what := ""
		if x.failpoints {
			setup.Nodes, setup.Failpoints, what = 1, true, " with failpoints"
		}
		db, _, err := b.NewDB(setup)
		if err != nil {
			return fmt.Errorf("backend %s, server version %s%s: %w", b.Name, x.version, what, err)
		}
		if p, ok := db.(backends.Preparer); ok {
			if err := p.Prepare(ctx, arch, out); err != nil {
				return fmt.Errorf("backend %s, server version %s%s: %w", b.Name, x.version, what, err)
			}
		}
	}
	return nil
}

// ClientImage is a client image to build before any run needs it:
// `check image build --client BACKEND=DIR`, so that CI's tests of the
// example clients find their images built, beside the server compiles,
// instead of building them inside their own time.
type ClientImage struct{ t *Test }

// PlanClientImage checks, before anything is built, that backend is a
// backend and dir a client directory, as a run of them would.
func PlanClientImage(backend, dir string) (ClientImage, error) {
	// Only what picks the node image is resolved (the backend, its
	// default server version and storage): a run's other settings play
	// no part in the client's image.
	t := newTest(Config{Backend: backend, Cluster: registry.ClusterDocker, ClientDir: dir, Given: map[string]bool{}}, nil)
	if !t.known {
		return ClientImage{}, errors.New(unknownBackendText(backend))
	}
	if t.clientErr != nil {
		return ClientImage{}, t.clientErr
	}
	t.cfg.defaults(t.info, t.known, t.client)
	return ClientImage{t}, nil
}

// Build makes the image a Docker run of the backend with this client
// would build on first use: the node image that backend's runs use (core
// or full, decided as a run decides it), then the client's image on it
// (its Debian packages, its build commands, its go_build compile). It
// returns the client image's tag.
func (c ClientImage) Build(ctx context.Context, cli *client.Client, out io.Writer) (string, error) {
	t := c.t
	node, err := t.ensureNodeImage(ctx, cli, t.setup(""), out)
	if err != nil {
		return "", fmt.Errorf("the node image: %w", err)
	}
	return images.EnsureClientImage(ctx, cli, node, t.client, out)
}
