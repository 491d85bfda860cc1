package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// A server node whose lock server runs from the user's image
// (Spec.ServerImage, --server-image) is two containers that share one
// network namespace:
//
//   - the node container, fc-<test>-n1, from the node image as always:
//     it owns the namespace (its address, its name on the test network)
//     and carries the tools — iptables, tc, the check binary — so every
//     partition, latency and probe is applied from it, inside the shared
//     namespace, and the server's image needs no shell and no tools;
//   - the server container, fc-<test>-n1-server, from the user's image,
//     run by its own entrypoint and configured through its environment,
//     joined to the node container's namespace (NetworkMode
//     container:<node>).
//
// The node container owns the namespace, not the server's: a killed
// server container is started again by the engine into the same
// namespace, address and name, where a namespace owned by the server
// would die with it and take every tool's view of it along.
//
// Freezes and kills go through the engine: Pause freezes both
// containers, KillImageServer SIGKILLs the server container, and
// StartImageServer starts it again with the data on its own disk.

// LabelImageServer marks a server container: "1". Its LabelNode is the
// node whose namespace it joins.
const LabelImageServer = "fencecheck.image-server"

// ImageServerName is the container name of a node's image-run server,
// fc-<test id>-<node>-server.
func ImageServerName(testID, node string) string { return ContainerName(testID, node) + "-server" }

// ServerImage is the image the server nodes' lock servers run from, ""
// when they run in the node containers.
func (c *Cluster) ServerImage() string { return c.serverImage }

// ImageServer is how a backend runs its server from the user's image
// (nodes').
type ImageServer = nodes.ImageServer

// ImageServerName is what the engine calls node's image-run server, for
// error messages (nodes.ImageServers).
func (c *Cluster) ImageServerName(node string) string { return ImageServerName(c.TestID, node) }

// StartImageServer runs node's lock server from the cluster's server
// image: the first time it creates the server container in node's
// network namespace, after a kill it starts the same container again
// (same configuration, data on its disk). It returns once the container
// runs; the backend waits for the server to answer.
func (c *Cluster) StartImageServer(ctx context.Context, node string, s ImageServer) error {
	n, err := c.container(node)
	if err != nil {
		return err
	}
	if c.serverImage == "" {
		return fmt.Errorf("test %s has no server image", c.TestID)
	}
	// A pause must not land while runc starts the container (see
	// startGate): the start would hang.
	defer c.HoldOffPause(node)()
	if n.ServerContainer == "" {
		labels := Labels(c.TestID)
		labels[LabelNode] = node
		labels[LabelRole] = n.Role
		labels[LabelImageServer] = "1"
		cfg := &container.Config{Image: c.serverImage, Env: s.Env, Cmd: s.Cmd, Labels: labels}
		hc := &container.HostConfig{NetworkMode: container.NetworkMode("container:" + n.ContainerID)}
		resp, err := c.cli.ContainerCreate(ctx, cfg, hc, nil, nil, ImageServerName(c.TestID, node))
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				return missingServerImageError(c.serverImage)
			}
			return fmt.Errorf("creating %s's server from %s: %w", node, c.serverImage, DaemonError(c.cli.DaemonHost(), err))
		}
		n.ServerContainer = resp.ID
	}
	if err := c.cli.ContainerStart(ctx, n.ServerContainer, container.StartOptions{}); err != nil {
		return fmt.Errorf("starting %s's server (%s): %w", node, c.serverImage, DaemonError(c.cli.DaemonHost(), err))
	}
	return nil
}

// KillImageServer SIGKILLs node's image-run server through the engine and
// waits until the engine says it has stopped, so a start that follows
// finds it stopped. A server that is not running is left as it is.
func (c *Cluster) KillImageServer(ctx context.Context, node string) error {
	n, err := c.container(node)
	if err != nil {
		return err
	}
	if n.ServerContainer == "" {
		return nil
	}
	if err := c.cli.ContainerKill(ctx, n.ServerContainer, "KILL"); err != nil && !strings.Contains(err.Error(), "is not running") {
		return fmt.Errorf("killing %s's server: %w", node, DaemonError(c.cli.DaemonHost(), err))
	}
	for {
		info, err := c.cli.ContainerInspect(ctx, n.ServerContainer)
		if err != nil {
			return fmt.Errorf("inspecting %s's server: %w", node, DaemonError(c.cli.DaemonHost(), err))
		}
		if info.State == nil || !info.State.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ImageServerLogs is the output of node's image-run server (nil when it
// has none).
func (c *Cluster) ImageServerLogs(ctx context.Context, node string, tail string) ([]byte, error) {
	n, err := c.container(node)
	if err != nil || n.ServerContainer == "" {
		return nil, err
	}
	rc, err := c.cli.ContainerLogs(ctx, n.ServerContainer, container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Tail: tail})
	if err != nil {
		return nil, fmt.Errorf("logs of %s's server: %w", node, DaemonError(c.cli.DaemonHost(), err))
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return buf.Bytes(), fmt.Errorf("logs of %s's server: %w", node, err)
	}
	return buf.Bytes(), nil
}

// ImageServerState is the engine's word for node's image-run server
// (running, exited, paused...) and its exit code, for errors that must
// say why a server does not answer.
func (c *Cluster) ImageServerState(ctx context.Context, node string) string {
	n, err := c.container(node)
	if err != nil || n.ServerContainer == "" {
		return "not created"
	}
	info, err := c.cli.ContainerInspect(ctx, n.ServerContainer)
	if err != nil || info.State == nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	if info.State.Status == "exited" {
		return fmt.Sprintf("exited with code %d", info.State.ExitCode)
	}
	return info.State.Status
}

func missingServerImageError(image string) error {
	return fmt.Errorf("server image %s is not on the Docker daemon: pull it first (docker pull %s) or build it; fencecheck never pulls", image, image)
}
