package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/reports"
)

// endpointsSystem is the system under test when the lock service is the
// user's own (--endpoints): their servers, already running, reached only
// by address; fencecheck's own fenced storage and client containers on
// Docker, a dockerSystem with no server node. Nothing here ever reaches a
// server's host: the questions put to the servers (what they are, what
// they hold at the end) go over the service's client protocol from a
// client container (`check ask-endpoints`), and the faults act on the
// client and storage containers alone (nemesis.BuildByAddress).
type endpointsSystem struct {
	*dockerSystem
	by registry.ByAddress
	// network is the Docker network the client containers joined to
	// reach the endpoints: --endpoints-network, or Docker's own bridge.
	network string
	// addrs are the endpoints with the addresses they resolved to in the
	// client containers when the run began.
	addrs []nemesis.ServiceAddress
}

// endpointsAskWait bounds the question put to the endpoints before the
// workload: a service that does not answer by then is refused.
const endpointsAskWait = 20 * time.Second

// openEndpoints sets up a run against the user's servers: the engine and
// the network they are reached on (refused before anything is created
// when it does not exist), the images, the storage and client containers
// (joined to that network), then the question whether every endpoint
// answers — one that does not is bad input, named, and everything is torn
// down — and the storage.
func (s systemSetup) openEndpoints(ctx context.Context) (System, error) {
	t, st := s.t, s.st
	cfg := &t.cfg
	by, _ := registry.LookupByAddress(cfg.Backend)
	id := st.testID
	if id == "" {
		id = testID(cfg, time.Now())
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
		return nil, err
	}
	network := cfg.EndpointsNetwork
	if network == "" {
		network = engine.DefaultBridge
	}
	switch ok, err := engine.NetworkExists(ctx, cli, network); {
	case err != nil:
		return nil, err
	case !ok && cfg.EndpointsNetwork != "":
		return nil, usage.Errorf("endpoints-network", "the Docker engine at %s has no network %q (docker network ls lists them; a docker-compose project's is <project>_default)", cli.DaemonHost(), network)
	case !ok:
		return nil, fmt.Errorf("the Docker engine at %s has no network %q, through which the client containers would reach your endpoints: name the network your service is on with --endpoints-network", cli.DaemonHost(), network)
	}
	st.phase("image")
	build := images.NewBuildOutput(s.progress, images.BuildOutputOptions{Verbose: cfg.VerboseBuild, LogDir: images.BuildLogDir(), Record: s.record})
	image, clientImage, err := s.endpointsImages(ctx, cli, build)
	build.Close()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	st.phase("cluster")
	st.clusterAsked = true
	cl, err := engine.Up(ctx, cli, engine.Spec{TestID: id, Image: image, Storage: true, Clients: cfg.Clients, Binary: bin, ClientImage: clientImage})
	if err != nil {
		return nil, err
	}
	es := &endpointsSystem{by: by, network: network,
		dockerSystem: &dockerSystem{t: t, nodes: cl, cluster: cl, image: image, clientImage: clientImage, logf: s.logf, dir: s.dir, st: st}}
	s.logf("cluster %s: storage and %s (image %s); the lock service is yours: %s, reached on network %s",
		id, words.Plural(cfg.Clients, "client"), image, strings.Join(cfg.Endpoints, ", "), network)
	st.phase("servers")
	if err := es.start(ctx, id); err != nil {
		es.Close(context.Background())
		return nil, err
	}
	s.logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
	return es, nil
}

// endpointsImages makes sure of the images the storage and client
// containers run: the core node image (the whole one where the storage
// needs it), and the --client program's.
func (s systemSetup) endpointsImages(ctx context.Context, cli *client.Client, build *images.BuildOutput) (image, clientImage string, err error) {
	if k, shared := registry.Storage(s.t.cfg.Storage); shared && !k.CoreImage {
		image, err = images.EnsureImage(ctx, cli, build)
	} else {
		image, err = images.EnsureCoreImage(ctx, cli, build)
	}
	if err != nil {
		return "", "", fmt.Errorf("the node image: %w", err)
	}
	if cl := s.t.client; cl != nil {
		if clientImage, err = images.EnsureClientImage(ctx, cli, image, cl, build); err != nil {
			return "", "", fmt.Errorf("the image of client %s: %w", cl.Manifest.Name, err)
		}
		s.logf("client %s (%s, manifest hash %s): image %s", cl.Manifest.Name, s.t.cfg.ClientDir, cl.Hash(), clientImage)
	}
	return image, clientImage, nil
}

// start joins the client containers to the endpoints' network, asks every
// endpoint what it is (one that does not answer is bad input, named),
// starts the storage and makes the clients' spec.
func (s *endpointsSystem) start(ctx context.Context, id string) error {
	t := s.t
	cfg := &t.cfg
	for _, n := range s.cluster.All() {
		if n.Role == nodes.RoleClient {
			if err := s.cluster.JoinNetwork(ctx, n.Name, s.network); err != nil {
				return err
			}
		}
	}
	actx, cancel := context.WithTimeout(ctx, endpointsAskWait)
	defer cancel()
	answers, err := s.askEndpoints(actx)
	if err != nil {
		return err
	}
	var silent []string
	for _, a := range answers {
		if a.Error != "" {
			silent = append(silent, a.Error)
			continue
		}
		s.logf("your %s at %s (%s): %s", t.info.Server, a.Endpoint, strings.Join(a.IPs, ", "), a.Answer)
		s.addrs = append(s.addrs, nemesis.ServiceAddress{Endpoint: a.Endpoint, IPs: a.IPs})
	}
	if len(silent) > 0 {
		return usage.Errorf("endpoints", "%s did not answer from the client containers (on network %s): %s; check the address, and that the service is reachable from a container on that network (--endpoints-network names the Docker network a containerised service is on)",
			words.Plural(len(silent), "endpoint"), s.network, strings.Join(silent, "; "))
	}
	var url, secret string
	if k, ok := registry.Storage(cfg.Storage); ok {
		if url, secret, err = k.Start(ctx, s.cluster, t.setup(id)); err != nil {
			return fmt.Errorf("starting the storage (%s) in the storage node: %w", cfg.Storage, err)
		}
	}
	s.spec = backends.ClientSpec{Backend: cfg.Backend, Recipe: cfg.Recipe, Storage: cfg.Storage, Fencing: cfg.Fencing,
		LeaseTTL: cfg.LeaseTTL, LeaseCheck: cfg.LeaseCheck, Endpoints: cfg.Endpoints, StorageURL: url, Secret: secret}
	return nil
}

// askNode is the client container the questions are asked from: the
// clients reach the endpoints, so the first of them does.
func (s *endpointsSystem) askNode() string { return history.SlotName(1) }

// askEndpoints asks, from a client container, every endpoint what it is
// and what its host resolves to there.
func (s *endpointsSystem) askEndpoints(ctx context.Context) ([]registry.EndpointAnswer, error) {
	out, err := s.ask(ctx, false)
	if err != nil {
		return nil, err
	}
	var answers []registry.EndpointAnswer
	if err := json.Unmarshal([]byte(out), &answers); err != nil {
		return nil, fmt.Errorf("asking your endpoints from %s: an answer that is not the list asked for (%v): %q", s.askNode(), err, tailString(out, 300))
	}
	return answers, nil
}

// ask runs `check ask-endpoints` in the ask node, bounded by ctx.
func (s *endpointsSystem) ask(ctx context.Context, state bool) (string, error) {
	wait := endpointsAskWait
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d) - time.Second
	}
	cmd := []string{engine.BinaryPath, "ask-endpoints", "--backend", s.t.cfg.Backend, "--timeout", max(wait, time.Second).String()}
	if state {
		cmd = append(cmd, "--state")
	}
	res, err := s.cluster.Exec(ctx, s.askNode(), append(cmd, s.t.cfg.Endpoints...))
	if err != nil {
		return "", fmt.Errorf("asking your endpoints from %s: %w", s.askNode(), err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("asking your endpoints from %s: exit %d: %s", s.askNode(), res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return res.Stdout, nil
}

// askVersions is what each endpoint's server says it is, once the last
// fault is healed, as a Docker run asks its server nodes.
func (s *endpointsSystem) askVersions(ctx context.Context) []reports.ServerNode {
	answers, err := s.askEndpoints(ctx)
	var out []reports.ServerNode
	for i, e := range s.t.cfg.Endpoints {
		switch {
		case err != nil:
			out = append(out, reports.ServerNode{Node: e, Version: reports.UnknownVersion, Error: err.Error()})
		case i < len(answers) && answers[i].Error == "":
			out = append(out, reports.ServerNode{Node: e, Version: answers[i].Version, Answer: answers[i].Answer})
		default:
			why := "no answer"
			if i < len(answers) {
				why = answers[i].Error
			}
			out = append(out, reports.ServerNode{Node: e, Version: reports.UnknownVersion, Error: why})
		}
	}
	return out
}

// askState is the end of a run's question of what every member holds,
// asked by address where the backend can (etcd's HashKV per member); where
// it cannot, the run says why it skipped the question.
func (s *endpointsSystem) askState(ctx context.Context) (*models.ServiceState, error) {
	if s.by.State == nil {
		s.logf("agreement: not asked: %s has no question of what each member holds that a service with other clients than this run's could answer", s.t.cfg.Backend)
		return nil, nil
	}
	out, err := s.ask(ctx, true)
	if err != nil {
		return nil, err
	}
	var st backends.ServiceState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return nil, fmt.Errorf("asking your endpoints what they hold: an answer that is not a state (%v): %q", err, tailString(out, 300))
	}
	return serviceState(st), nil
}

// buildFaults makes the run's faults over the client and storage
// containers only.
func (s *endpointsSystem) buildFaults(ctx context.Context, env *nemesis.Env) ([]nemesis.Fault, error) {
	return nemesis.BuildByAddress(ctx, s.t.kinds, env, s.addrs)
}

// describeTo fills in what the faults need: the storage and client
// containers; no server node (the servers are the user's).
func (s *endpointsSystem) describeTo(env *nemesis.Env) {
	env.Settings = s.t.faultSettings(true, len(s.t.cfg.Endpoints))
	env.Cluster, env.Storage = s.cluster, engine.StorageNode
	env.Log = s.logf
}

// Info says, above all, that the lock service was the user's, given by
// endpoints, so that nobody takes the run for one on servers fencecheck
// built.
func (s *endpointsSystem) Info() map[string]string {
	info := map[string]string{
		"lock service":      fmt.Sprintf("yours, given by --endpoints (%s): fencecheck started no server and had no access to them", strings.Join(s.t.cfg.Endpoints, ", ")),
		"docker test id":    s.cluster.TestID,
		"image":             s.image,
		"docker cluster":    "new: the storage and client containers only",
		"endpoints network": s.network,
	}
	if s.clientImage != "" {
		info["client image"] = s.clientImage
	}
	return info
}

// Close collects the storage's and clients' logs and removes their
// containers; the user's servers are left as they are.
func (s *endpointsSystem) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var errs []error
	stuck := map[string]bool{}
	paths := map[string][]string{}
	for _, n := range s.cluster.All() {
		if err := s.cluster.Unpause(ctx, n.Name); err != nil {
			stuck[n.Name] = true
			errs = append(errs, fmt.Errorf("could not resume %s: %w", n.Name, err))
		}
		paths[n.Name] = []string{backends.LogDir}
	}
	if err := s.cluster.CollectLogsExcept(ctx, s.dir.Logs(), paths, stuck); err != nil {
		s.logf("collecting logs: %v", err)
	}
	if s.t.cfg.KeepCluster {
		s.logf("containers %s kept (--keep-cluster): docker exec -it %s bash; remove them with: check cluster down --id %s",
			s.cluster.TestID, engine.ContainerName(s.cluster.TestID, s.askNode()), s.cluster.TestID)
		return errors.Join(errs...)
	}
	if err := s.cluster.Down(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// endpointParams are the run's parameters that say its service was the
// user's: the endpoints and their network; the server version asked for
// means nothing (the servers' answer says what they are).
func (t *Test) endpointParams(p []reports.Param) []reports.Param {
	c := &t.cfg
	if len(c.Endpoints) == 0 {
		return p
	}
	for i := range p {
		if p[i].Name == "server-version" {
			p[i].Value = ""
		}
	}
	return append(p, reports.Param{Name: "endpoints", Value: strings.Join(c.Endpoints, ",")}, reports.Param{Name: "endpoints-network", Value: c.EndpointsNetwork})
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
