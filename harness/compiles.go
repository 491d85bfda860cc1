package harness

import (
	"context"
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
// (registry.Info.Agent) for the check binary that runs the tests. Each
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
	for _, b := range registry.All() {
		if b.NewDB == nil {
			continue // in process only
		}
		versions := b.Versions
		if len(versions) == 0 {
			versions = []string{registry.DefaultVersion}
		}
		for _, v := range versions {
			db, _, err := b.NewDB(registry.Setup{Recipe: b.Recipes[0], ServerVersion: v, Nodes: 3, LeaseTTL: 2 * time.Second})
			if err != nil {
				return fmt.Errorf("backend %s, server version %s: %w", b.Name, v, err)
			}
			if p, ok := db.(backends.Preparer); ok {
				if err := p.Prepare(ctx, arch, out); err != nil {
					return fmt.Errorf("backend %s, server version %s: %w", b.Name, v, err)
				}
			}
		}
		if a := b.Agent; a != nil {
			bin, err := agentBinary(&Config{})
			if err != nil {
				return err
			}
			if _, err := images.AgentProgramBinary(ctx, images.AgentProgram{Name: a.Name, Package: a.Package, What: a.What}, bin, arch, out); err != nil {
				return fmt.Errorf("backend %s's clients: %w", b.Name, err)
			}
		}
	}
	return nil
}
