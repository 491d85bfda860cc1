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
	n, err := c.container(node)
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
		c.setPauseInDoubt(node, true)
		return fmt.Errorf("pausing %s: %w", node, askError(c.cli.DaemonHost(), "the pause of "+node, began, err))
	}
	return nil
}

// Unpause resumes a paused node; resuming a running node does nothing.
// After a pause of the node that ended in an error, the daemon may still
// be about to apply it: the engine's pause handler does not stop when the
// client gives up on the request, and a starved daemon runs it late. So
// the node is then watched until it has stayed running for a while,
// unpaused again each time it is found frozen (settleUnpaused): a heal
// must leave nothing frozen behind it.
func (c *Cluster) Unpause(ctx context.Context, node string) error {
	if err := c.unpauseOnce(ctx, node); err != nil {
		return err
	}
	if !c.pauseInDoubt(node) {
		return nil
	}
	err := settleUnpaused(ctx, settleRules{Quiet: 3 * time.Second, Every: 200 * time.Millisecond, Limit: 30 * time.Second},
		func() (bool, error) { return c.partlyPaused(ctx, node) },
		func() error { return c.unpauseOnce(ctx, node) })
	if err != nil {
		return fmt.Errorf("resuming %s after a pause that got no answer: %w", node, err)
	}
	c.setPauseInDoubt(node, false)
	return nil
}

func (c *Cluster) pauseInDoubt(node string) bool {
	g := c.gate(node)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pauseInDoubt
}

func (c *Cluster) setPauseInDoubt(node string, doubt bool) {
	g := c.gate(node)
	g.mu.Lock()
	g.pauseInDoubt = doubt
	g.mu.Unlock()
}

// settleRules: how long a node must be seen running in a row (Quiet),
// how often it is looked at (Every), and how long in all before giving up
// (Limit).
type settleRules struct {
	Quiet, Every, Limit time.Duration
}

// settleUnpaused looks at a node every r.Every until it has been seen
// running for r.Quiet in a row, unpausing it each time it is seen
// frozen; it fails when r.Limit passes first or ctx ends.
func settleUnpaused(ctx context.Context, r settleRules, paused func() (bool, error), unpause func() error) error {
	start := time.Now()
	quietSince := start
	for {
		frozen, err := paused()
		if err != nil {
			return err
		}
		now := time.Now()
		if frozen {
			if err := unpause(); err != nil {
				return err
			}
			quietSince = time.Now()
		} else if now.Sub(quietSince) >= r.Quiet {
			return nil
		}
		if now.Sub(start) >= r.Limit {
			return fmt.Errorf("still found frozen after %s of unpausing it", r.Limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.Every):
		}
	}
}

func (c *Cluster) unpauseOnce(ctx context.Context, node string) error {
	n, err := c.container(node)
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

// partlyPaused reports whether the node's container, or the server
// container in its namespace, is frozen now.
func (c *Cluster) partlyPaused(ctx context.Context, node string) (bool, error) {
	n, err := c.container(node)
	if err != nil {
		return false, err
	}
	for _, id := range []string{n.ContainerID, n.ServerContainer} {
		if id == "" {
			continue
		}
		if paused, err := c.containerPaused(ctx, node, id); err != nil || paused {
			return paused, err
		}
	}
	return false, nil
}

// Paused reports whether the node is frozen now.
func (c *Cluster) Paused(ctx context.Context, node string) (bool, error) {
	n, err := c.container(node)
	if err != nil {
		return false, err
	}
	return c.containerPaused(ctx, node, n.ContainerID)
}

// containerPaused asks the engine whether container id, of node, is
// paused.
func (c *Cluster) containerPaused(ctx context.Context, node, id string) (bool, error) {
	began := time.Now()
	info, err := c.cli.ContainerInspect(ctx, id)
	if err != nil {
		return false, askError(c.cli.DaemonHost(), "the inspection of "+node, began, err)
	}
	return info.State != nil && info.State.Paused, nil
}
