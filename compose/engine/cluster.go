package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// Cluster is the running containers of one test: the Docker driver of
// nodes.Nodes, and what only the Docker driver does besides (Up, Attach,
// Rewarm, the server image, the power layer's container).
type Cluster struct {
	TestID     string
	Network    string       // the network's name, fc-<test id>
	Containers []*Container // n1..nN, storage, c1..cM

	cli       *client.Client
	privMu    sync.Mutex // privilegedExecWorks
	privKnown bool
	privOK    bool

	startMu   sync.Mutex
	starts    map[string]*startGate // per node
	serverEnv map[string][]string   // per node, see SetServerEnv

	serverImage string // Spec.ServerImage, see imageserver.go
}

// startGate keeps a pause of a node from landing while a process is being
// started in it: runc's init, caught by the freezer half way into the
// container, hangs, and with it every later call about that container
// (unpause and inspect included) until the cgroup is thawed by hand.
// Starts may overlap each other and nest; a pause waits until none is
// going on, and starts wait while a pause is being applied.
type startGate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	starting int
	pausing  bool
	// pauseInDoubt: a pause of the node ended in an error (no answer in
	// time, a cancelled request), so the daemon may still apply it after
	// the unpause that heals it; Unpause then watches the node (see
	// settleUnpaused).
	pauseInDoubt bool
}

func (c *Cluster) gate(node string) *startGate {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.starts == nil {
		c.starts = map[string]*startGate{}
	}
	g := c.starts[node]
	if g == nil {
		g = &startGate{}
		g.cond = sync.NewCond(&g.mu)
		c.starts[node] = g
	}
	return g
}

// HoldOffPause keeps Pause of node waiting until release is called. Exec
// holds it off until the command's process runs; a caller that needs its
// process further along first (an agent that must answer before it may be
// frozen) holds it off for longer.
func (c *Cluster) HoldOffPause(node string) (release func()) {
	g := c.gate(node)
	g.mu.Lock()
	for g.pausing {
		g.cond.Wait()
	}
	g.starting++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.starting--
			g.cond.Broadcast()
			g.mu.Unlock()
		})
	}
}

// pausing runs pause once no start is going on, holding starts off
// meanwhile.
func (c *Cluster) pausing(node string, pause func() error) error {
	g := c.gate(node)
	g.mu.Lock()
	for g.starting > 0 || g.pausing {
		g.cond.Wait()
	}
	g.pausing = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.pausing = false
		g.cond.Broadcast()
		g.mu.Unlock()
	}()
	return pause()
}

var (
	_ nodes.Nodes        = (*Cluster)(nil)
	_ nodes.ImageServers = (*Cluster)(nil)
	_ nodes.FSLayerer    = (*Cluster)(nil)
)

// Container is one node of a cluster as Docker knows it.
type Container struct {
	Name        string // n1, storage, c1: also its hostname and DNS name
	ContainerID string
	IP          string // on the cluster's network
	Role        string // RoleServer, RoleStorage or RoleClient
	// ServerContainer is the id of the server container run from the
	// cluster's server image in this node's network namespace, once
	// started ("" otherwise; see imageserver.go).
	ServerContainer string
}

// Up creates the network and the containers of spec and starts them. The
// containers only run `sleep infinity`; nothing is started in them. On
// failure Up removes what it created and leaves everything else alone.
func Up(ctx context.Context, cli *client.Client, spec Spec) (*Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := checkImages(ctx, cli, spec); err != nil {
		return nil, err
	}
	if spec.Binary != "" {
		// The nodes run from the agent image, which carries the binary
		// (agentimage.go): no copy per container.
		var err error
		if spec, err = withAgentImages(ctx, cli, spec); err != nil {
			return nil, err
		}
	}
	configs := ContainerConfigs(spec)
	if err := checkNamesFree(ctx, cli, spec.TestID, configs); err != nil {
		return nil, err
	}

	c := &Cluster{TestID: spec.TestID, Network: NetworkName(spec.TestID), cli: cli, serverImage: spec.ServerImage}
	created := &upCreated{}
	success := false
	defer func() {
		if !success {
			created.remove(ctx, cli, spec.TestID)
		}
	}()

	resp, err := cli.NetworkCreate(ctx, c.Network, NetworkOptions(spec.TestID))
	if err != nil {
		if cerrdefs.IsConflict(err) {
			return nil, nameTakenError("network", c.Network, spec.TestID, false)
		}
		return nil, fmt.Errorf("test %s: creating network %s: %w", spec.TestID, c.Network, DaemonError(cli.DaemonHost(), err))
	}
	created.netID = resp.ID

	c.Containers, err = createNodes(ctx, cli, configs, created)
	if err != nil {
		return nil, fmt.Errorf("test %s: %w", spec.TestID, err)
	}
	for _, n := range c.Containers {
		if err := c.waitRunning(ctx, n); err != nil {
			return nil, fmt.Errorf("test %s: %w", spec.TestID, err)
		}
	}
	success = true
	return c, nil
}

// checkImages fails before anything is created when the node image or the
// server image is missing: Up never pulls or builds, it says which command
// would.
func checkImages(ctx context.Context, cli *client.Client, spec Spec) error {
	exists, err := ImageExists(ctx, cli, spec.Image)
	if err != nil {
		return err
	}
	if !exists {
		return missingImageError(spec.Image)
	}
	if spec.ServerImage != "" {
		exists, err := ImageExists(ctx, cli, spec.ServerImage)
		if err != nil {
			return err
		}
		if !exists {
			return missingServerImageError(spec.ServerImage)
		}
	}
	return nil
}

// upCreated is what a failing Up has to remove: the network and every
// container created so far (the node goroutines add to ids under mu).
type upCreated struct {
	mu    sync.Mutex
	netID string
	ids   []string
}

// remove takes away what Up created, with a minute of its own so that a
// cancelled ctx still cleans up.
func (u *upCreated) remove(ctx context.Context, cli *client.Client, testID string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for _, id := range u.ids {
		removeContainer(cctx, cli, id)
	}
	if u.netID != "" {
		cli.NetworkRemove(cctx, u.netID)
	}
	if ctx.Err() != nil {
		// Cut short: a create whose answer was lost may still be
		// carried out by the daemon. Remove by label what appears.
		for i := 0; i < 3; i++ {
			select {
			case <-cctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			removeObjects(cctx, cli, testID, nil)
		}
	}
}

// createNodes creates and starts a container per config, four at a time,
// recording every id in created as soon as there is one.
func createNodes(ctx context.Context, cli *client.Client, configs []ContainerConfig, created *upCreated) ([]*Container, error) {
	made := make([]*Container, len(configs))
	errs := make([]error, len(configs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // the daemon serialises much of this anyway
	for i, cfg := range configs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			id, err := createNode(ctx, cli, cfg)
			if id != "" {
				created.mu.Lock()
				created.ids = append(created.ids, id)
				created.mu.Unlock()
			}
			if err != nil {
				errs[i] = err
				return
			}
			made[i] = &Container{Name: cfg.Node, ContainerID: id, Role: cfg.Role}
		}()
	}
	wg.Wait()
	return made, errors.Join(errs...)
}

// createNode creates and starts one container. It returns the container's
// id as soon as there is one.
func createNode(ctx context.Context, cli *client.Client, cfg ContainerConfig) (string, error) {
	resp, err := cli.ContainerCreate(ctx, cfg.Config, cfg.HostConfig, cfg.Networking, nil, cfg.Name)
	if err != nil {
		switch {
		case cerrdefs.IsConflict(err):
			return "", nameTakenError("container", cfg.Name, cfg.Config.Labels[LabelTest], false)
		case cerrdefs.IsNotFound(err):
			return "", missingImageError(cfg.Config.Image)
		}
		return "", fmt.Errorf("creating %s: %w", cfg.Name, DaemonError(cli.DaemonHost(), err))
	}
	if err := cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return resp.ID, fmt.Errorf("starting %s: %w", cfg.Name, DaemonError(cli.DaemonHost(), err))
	}
	return resp.ID, nil
}

// waitRunning waits until the node's container runs and has its address on
// the cluster network, and records the address.
func (c *Cluster) waitRunning(ctx context.Context, n *Container) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := c.cli.ContainerInspect(ctx, n.ContainerID)
		if err != nil {
			return fmt.Errorf("inspecting %s: %w", n.Name, err)
		}
		if info.State != nil && !info.State.Running && info.State.Status == "exited" {
			return fmt.Errorf("node %s exited with code %d right after starting: %s", n.Name, info.State.ExitCode, info.State.Error)
		}
		if info.State != nil && info.State.Running && info.NetworkSettings != nil {
			if ep := info.NetworkSettings.Networks[c.Network]; ep != nil && ep.IPAddress != "" {
				n.IP = ep.IPAddress
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s is not running with an address on %s after 30s", n.Name, c.Network)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkNamesFree fails with a clear error when the test's network or one of
// its container names already exists.
func checkNamesFree(ctx context.Context, cli *client.Client, testID string, configs []ContainerConfig) error {
	nets, err := cli.NetworkList(ctx, networkListByName(NetworkName(testID)))
	if err != nil {
		return DaemonError(cli.DaemonHost(), err)
	}
	for _, n := range nets {
		if n.Name == NetworkName(testID) {
			return nameTakenError("network", n.Name, testID, n.Labels[LabelFencecheck] == "1")
		}
	}
	for _, cfg := range configs {
		info, err := cli.ContainerInspect(ctx, cfg.Name)
		switch {
		case err == nil:
			return nameTakenError("container", cfg.Name, testID, info.Config != nil && info.Config.Labels[LabelFencecheck] == "1")
		case cerrdefs.IsNotFound(err):
		default:
			return DaemonError(cli.DaemonHost(), err)
		}
	}
	return nil
}

func nameTakenError(kind, name, testID string, ours bool) error {
	if ours {
		return fmt.Errorf("name already taken: %s %s exists, left over from an earlier run of test %q; remove its leftovers first (DownAll for test %q)",
			kind, name, testID, testID)
	}
	return fmt.Errorf("name already taken: %s %s exists; remove it or choose another test id", kind, name)
}

func missingImageError(image string) error {
	return fmt.Errorf("image %s is not on the Docker daemon: run `check image build`", image)
}

// ImageExists says whether the engine holds the image ref; it never pulls
// one.
func ImageExists(ctx context.Context, cli *client.Client, ref string) (bool, error) {
	_, err := cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	default:
		return false, DaemonError(cli.DaemonHost(), err)
	}
}

// ID is the test's id, the label every container of it carries.
func (c *Cluster) ID() string { return c.TestID }

// Node returns the node with the given name.
func (c *Cluster) Node(name string) (nodes.Node, error) {
	n, err := c.container(name)
	if err != nil {
		return nodes.Node{}, err
	}
	return n.node(), nil
}

// All lists the nodes: servers, then storage, then clients, as Up and
// Attach order them.
func (c *Cluster) All() []nodes.Node {
	all := make([]nodes.Node, 0, len(c.Containers))
	for _, n := range c.Containers {
		all = append(all, n.node())
	}
	return all
}

// container is the node's container record.
func (c *Cluster) container(name string) (*Container, error) {
	for _, n := range c.Containers {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("test %s has no node %q", c.TestID, name)
}

func (n *Container) node() nodes.Node { return nodes.Node{Name: n.Name, IP: n.IP, Role: n.Role} }

// Down removes the cluster's containers (paused ones too), its network and
// any volume labelled with its test id. It is idempotent.
func (c *Cluster) Down(ctx context.Context) error {
	var ids []string
	for _, n := range c.Containers {
		if n != nil {
			ids = append(ids, n.ContainerID)
		}
	}
	return removeObjects(ctx, c.cli, c.TestID, ids)
}

func singleFileTar(name string, data []byte, mode int64) ([]byte, error) {
	return filesTar([]tarFile{{Name: name, Data: data, Mode: mode}})
}

// tarFile is one regular file of a tar.
type tarFile struct {
	Name string // relative to where the tar is unpacked
	Data []byte
	Mode int64
}

// filesTar is a tar of regular files.
func filesTar(files []tarFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{
			Name:     f.Name,
			Mode:     f.Mode,
			Size:     int64(len(f.Data)),
			ModTime:  time.Now(),
			Typeflag: tar.TypeReg,
			Format:   tar.FormatPAX,
		}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Attach finds the running cluster of a test from its labels, for a process
// other than the one that brought it up (to exec into it, collect its logs
// or take it down).
func Attach(ctx context.Context, cli *client.Client, testID string) (*Cluster, error) {
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: labelFilter(testID)})
	if err != nil {
		return nil, DaemonError(cli.DaemonHost(), err)
	}
	if testID == "" || len(cs) == 0 {
		return nil, fmt.Errorf("no containers of test %q", testID)
	}
	c := &Cluster{TestID: testID, Network: NetworkName(testID), cli: cli}
	servers := map[string]string{} // node → its image-run server
	for _, s := range cs {
		if s.Labels[LabelFSLayer] == "1" {
			continue // a node's filesystem layer (fslayer.go), no node
		}
		if s.Labels[LabelImageServer] == "1" {
			servers[s.Labels[LabelNode]] = s.ID
			c.serverImage = s.Image
			continue
		}
		n := &Container{Name: s.Labels[LabelNode], ContainerID: s.ID, Role: s.Labels[LabelRole]}
		if s.NetworkSettings != nil {
			if ep := s.NetworkSettings.Networks[c.Network]; ep != nil {
				n.IP = ep.IPAddress
			}
		}
		c.Containers = append(c.Containers, n)
	}
	for _, n := range c.Containers {
		n.ServerContainer = servers[n.Name]
	}
	rank := map[string]int{RoleServer: 0, RoleStorage: 1, RoleClient: 2}
	sort.Slice(c.Containers, func(i, j int) bool {
		a, b := c.Containers[i], c.Containers[j]
		if rank[a.Role] != rank[b.Role] {
			return rank[a.Role] < rank[b.Role]
		}
		if len(a.Name) != len(b.Name) {
			return len(a.Name) < len(b.Name) // n2 before n10
		}
		return a.Name < b.Name
	})
	return c, nil
}
