package fenced

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// StartNode runs `check storage` in the storage node with mode and waits
// until it answers. It returns the URL clients use.
func StartNode(ctx context.Context, c nodes.Nodes, mode Mode) (string, error) {
	node := nodes.StorageNode
	err := backends.StartDaemon(ctx, c, node, "storage",
		[]string{nodes.BinaryPath, "storage", "--listen", fmt.Sprintf(":%d", Port), "--fencing", string(mode)}, nodes.ExecOptions{})
	if err != nil {
		return "", err
	}
	if err := backends.WaitUntil(ctx, c, node, "storage",
		[]string{nodes.BinaryPath, "probe", fmt.Sprintf("http://127.0.0.1:%d/health", Port)}, 30*time.Second); err != nil {
		return "", err
	}
	// Docker's network knows the node as storage; on bare hosts the
	// clients reach it by its address.
	host, err := nodes.PeerHost(c, node)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s:%d", host, Port), nil
}
