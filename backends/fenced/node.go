package fenced

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/engine"
)

// StartNode runs `check storage` in the storage node with mode and waits
// until it answers. It returns the URL clients use.
func StartNode(ctx context.Context, c *engine.Cluster, mode Mode) (string, error) {
	node := engine.StorageNode
	err := backends.StartDaemon(ctx, c, node, "storage",
		[]string{engine.BinaryPath, "storage", "--listen", fmt.Sprintf(":%d", Port), "--fencing", string(mode)}, engine.ExecOptions{})
	if err != nil {
		return "", err
	}
	if err := backends.WaitUntil(ctx, c, node, "storage",
		[]string{engine.BinaryPath, "probe", fmt.Sprintf("http://127.0.0.1:%d/health", Port)}, 30*time.Second); err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s:%d", node, Port), nil
}
