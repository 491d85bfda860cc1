package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
)

// Pause freezes every process of the node with the cgroup freezer. While
// paused, exec into the node fails and the kernel still ACKs TCP for it:
// peers see timeouts, not refusals. A pause waits for the execs being
// started in the node to be running (see HoldOffPause).
func (c *Cluster) Pause(ctx context.Context, node string) error {
	n, err := c.Node(node)
	if err != nil {
		return err
	}
	var began time.Time
	pause := func() error {
		began = time.Now()
		if err := c.cli.ContainerPause(ctx, n.ContainerID); err != nil {
			return err
		}
		if n.ServerContainer != "" {
			// The server from the user's image is the node's lock server:
			// it freezes with the node.
			if err := c.cli.ContainerPause(ctx, n.ServerContainer); err != nil && !strings.Contains(err.Error(), "is not running") {
				return err
			}
		}
		return nil
	}
	if err := c.pausing(node, pause); err != nil {
		if cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "is already paused") {
			return nil // already paused
		}
		return fmt.Errorf("pausing %s: %w", node, askError(c.cli.DaemonHost(), "the pause of "+node, began, err))
	}
	return nil
}

// Unpause resumes a paused node; resuming a running node does nothing.
func (c *Cluster) Unpause(ctx context.Context, node string) error {
	n, err := c.Node(node)
	if err != nil {
		return err
	}
	began := time.Now()
	if n.ServerContainer != "" {
		if err := c.cli.ContainerUnpause(ctx, n.ServerContainer); err != nil && !cerrdefs.IsConflict(err) &&
			!strings.Contains(err.Error(), "is not paused") && !strings.Contains(err.Error(), "is not running") {
			return fmt.Errorf("resuming %s's server: %w", node, askError(c.cli.DaemonHost(), "the unpause of "+node+"'s server", began, err))
		}
	}
	if err := c.cli.ContainerUnpause(ctx, n.ContainerID); err != nil {
		if cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "is not paused") {
			return nil // not paused (engine 20.10 answers 500, not 409)
		}
		return fmt.Errorf("resuming %s: %w", node, askError(c.cli.DaemonHost(), "the unpause of "+node, began, err))
	}
	return nil
}

// Paused reports whether the node is frozen now.
func (c *Cluster) Paused(ctx context.Context, node string) (bool, error) {
	n, err := c.Node(node)
	if err != nil {
		return false, err
	}
	began := time.Now()
	info, err := c.cli.ContainerInspect(ctx, n.ContainerID)
	if err != nil {
		return false, askError(c.cli.DaemonHost(), "the inspection of "+node, began, err)
	}
	return info.State != nil && info.State.Paused, nil
}
