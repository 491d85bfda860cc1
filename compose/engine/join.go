package engine

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// DefaultBridge is Docker's own bridge network, through which a container
// reaches an address outside the engine (NAT through the host).
const DefaultBridge = "bridge"

// JoinNetwork connects node's container to an existing network that is
// not the test's: the user's own (where the lock service they test runs)
// or DefaultBridge. The test's network stays the container's first; the
// container is left on the other network until it is removed, which
// disconnects it. Nothing is created, and the network is never changed.
func (c *Cluster) JoinNetwork(ctx context.Context, node, netName string) error {
	n, err := c.container(node)
	if err != nil {
		return err
	}
	if err := c.cli.NetworkConnect(ctx, netName, n.ContainerID, &network.EndpointSettings{}); err != nil {
		return fmt.Errorf("connecting %s to network %s: %w", node, netName, DaemonError(c.cli.DaemonHost(), err))
	}
	return nil
}

// NetworkExists says whether the engine has a network named netName (or
// with that id).
func NetworkExists(ctx context.Context, cli *client.Client, netName string) (bool, error) {
	_, err := cli.NetworkInspect(ctx, netName, network.InspectOptions{})
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, DaemonError(cli.DaemonHost(), err)
}
