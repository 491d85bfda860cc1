package engine

import (
	"fmt"
	"path"
	"regexp"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/history"
)

// Labels every object of a test carries.
const (
	LabelFencecheck = "fencecheck"      // always "1"
	LabelTest       = "fencecheck.test" // the test id
	LabelNode       = "fencecheck.node" // containers: the node name (n1, storage, c1)
	LabelRole       = "fencecheck.role" // containers: server, storage or client
)

// Node roles, nodes'.
const (
	RoleServer  = nodes.RoleServer
	RoleStorage = nodes.RoleStorage
	RoleClient  = nodes.RoleClient
)

// StorageNode is the name of the storage node, nodes'.
const StorageNode = nodes.StorageNode

// Spec describes the cluster of one test.
type Spec struct {
	TestID  string // label value and part of every name; [a-z0-9][a-z0-9_.-]*
	Image   string // the node image, usually ImageTag()
	Servers int    // n1..nN
	Storage bool   // a node named "storage"
	Clients int    // c1..cM
	Binary  string // host path of a static linux binary copied into every node as /usr/local/bin/check; may be ""
	// Programs are more static binaries every node carries beside Binary
	// (a backend's own agent program, ProgramPath), committed in the
	// same layer of the agent image; they need Binary.
	Programs []Program
	// ClientImage, when set, is the image of c1..cM (a user's client
	// image, derived from Image); "" runs them on Image.
	ClientImage string
	// ServerImage, when set, is the user's image the server nodes' lock
	// servers run from, each in a container of its own that joins its
	// node's network namespace (imageserver.go); the node containers
	// stay on Image and carry the tools.
	ServerImage string
}

// BinaryPath is where Spec.Binary lands inside every node: where every
// driver puts it (nodes.BinaryPath).
const BinaryPath = nodes.BinaryPath

// Program is one more binary for the nodes (Spec.Programs): its bytes, and
// where it lands in every node.
type Program struct {
	// Path is its absolute path in the node (ProgramPath(name)).
	Path string
	Data []byte
}

// ProgramPath is where a program named name lands in the nodes: beside
// the check binary, on PATH.
func ProgramPath(name string) string { return nodes.ProgramPath(name) }

// ContainerConfig is everything Up passes to ContainerCreate for one node.
type ContainerConfig struct {
	Node       string // n1, storage, c1
	Role       string
	Name       string // the container name, fc-<test id>-<node>
	Config     *container.Config
	HostConfig *container.HostConfig
	Networking *network.NetworkingConfig
}

var testIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// Validate says whether the spec can be brought up.
func (s Spec) Validate() error {
	switch {
	case !testIDPattern.MatchString(s.TestID) || len(s.TestID) > 48:
		return fmt.Errorf("test id %q: want 1 to 48 of [a-z0-9_.-], starting with a letter or digit", s.TestID)
	case s.Image == "":
		return fmt.Errorf("test %s: no image (use ImageTag() after `check image build`)", s.TestID)
	case s.Servers < 0 || s.Clients < 0:
		return fmt.Errorf("test %s: negative node count (servers %d, clients %d)", s.TestID, s.Servers, s.Clients)
	case s.Servers+s.Clients == 0 && !s.Storage:
		return fmt.Errorf("test %s: no nodes", s.TestID)
	case len(s.Programs) > 0 && s.Binary == "":
		return fmt.Errorf("test %s: programs for the nodes go into the agent image with the check binary, and no binary was given", s.TestID)
	}
	seen := map[string]bool{BinaryPath: true}
	for _, p := range s.Programs {
		if !path.IsAbs(p.Path) || path.Clean(p.Path) != p.Path || p.Path == "/" {
			return fmt.Errorf("test %s: program path %q is not an absolute file path", s.TestID, p.Path)
		}
		if seen[p.Path] {
			return fmt.Errorf("test %s: two binaries for %s", s.TestID, p.Path)
		}
		seen[p.Path] = true
		if len(p.Data) == 0 {
			return fmt.Errorf("test %s: the program for %s is empty", s.TestID, p.Path)
		}
	}
	return nil
}

// NetworkName is the name of a test's network, fc-<test id>.
func NetworkName(testID string) string { return "fc-" + testID }

// ContainerName is the name of a node's container, fc-<test id>-<node>.
func ContainerName(testID, node string) string { return "fc-" + testID + "-" + node }

// Labels are the labels of every object of a test.
func Labels(testID string) map[string]string {
	return map[string]string{LabelFencecheck: "1", LabelTest: testID}
}

// NetworkOptions is the configuration of a test's network: a private
// bridge, internal so that no packet leaves the host.
func NetworkOptions(testID string) network.CreateOptions {
	return network.CreateOptions{
		Driver:   "bridge",
		Internal: true,
		Labels:   Labels(testID),
	}
}

// NodeNames lists a spec's nodes in order: n1..nN, storage, c1..cM, with
// their roles.
func NodeNames(spec Spec) (names, roles []string) {
	for i := 1; i <= spec.Servers; i++ {
		names, roles = append(names, fmt.Sprintf("n%d", i)), append(roles, RoleServer)
	}
	if spec.Storage {
		names, roles = append(names, StorageNode), append(roles, RoleStorage)
	}
	for i := 1; i <= spec.Clients; i++ {
		names, roles = append(names, history.SlotName(i)), append(roles, RoleClient)
	}
	return names, roles
}

// ContainerConfigs is the pure description of a spec's containers, in node
// order. Up creates exactly these; docker-compose.yml describes the same
// (a test keeps the two equal). Each container runs the image's CMD
// (sleep infinity) under Docker's tiny init, which reaps the servers'
// orphans; has the node name as hostname and as DNS alias on the test
// network; and has NET_ADMIN for tc and iptables, nothing more.
func ContainerConfigs(spec Spec) []ContainerConfig {
	names, roles := NodeNames(spec)
	out := make([]ContainerConfig, len(names))
	netName := NetworkName(spec.TestID)
	for i, node := range names {
		labels := Labels(spec.TestID)
		labels[LabelNode] = node
		labels[LabelRole] = roles[i]
		init := true
		image := spec.Image
		if roles[i] == RoleClient && spec.ClientImage != "" {
			image = spec.ClientImage
		}
		out[i] = ContainerConfig{
			Node: node,
			Role: roles[i],
			Name: ContainerName(spec.TestID, node),
			Config: &container.Config{
				Image:    image,
				Hostname: node,
				Labels:   labels,
			},
			HostConfig: &container.HostConfig{
				NetworkMode: container.NetworkMode(netName),
				CapAdd:      []string{"NET_ADMIN"},
				Init:        &init,
			},
			Networking: &network.NetworkingConfig{
				EndpointsConfig: map[string]*network.EndpointSettings{
					netName: {Aliases: []string{node}},
				},
			},
		}
	}
	return out
}
