package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/nemesis"
)

// The long run's heal check: after the run, nothing of a fault is left in
// the kept cluster.

// healProblems inspects the kept cluster: paused containers, partition or
// latency rules left in iptables, a delayer still running, an etcd member
// that is down or sees no leader.
func healProblems(ctx context.Context, testID string) (problems []string, err error) {
	cli, err := engine.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	c, err := engine.Attach(ctx, cli, testID)
	if err != nil {
		return nil, err
	}
	script := fmt.Sprintf(`n=0
for ch in %s %s; do r=$(iptables -w -S "$ch" 2>/dev/null | grep -c '^-A'); n=$((n + ${r:-0})); done
echo "rules $n"
if [ -e /run/fencecheck-delay.pid ]; then echo "delayer running"; fi`, nemesis.FenceChain, nemesis.DelayChain)
	for _, n := range c.All() {
		paused, err := c.Paused(ctx, n.Name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		if paused {
			problems = append(problems, n.Name+" is paused")
			continue
		}
		res, err := c.ExecPrivileged(ctx, n.Name, []string{"sh", "-c", script})
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		if !strings.Contains(res.Stdout, "rules 0") {
			problems = append(problems, fmt.Sprintf("%s: iptables %s", n.Name, strings.TrimSpace(res.Stdout)))
		}
		if strings.Contains(res.Stdout, "delayer running") {
			problems = append(problems, n.Name+": the latency delayer still runs")
		}
		if n.Role == engine.RoleServer {
			res, err := c.Exec(ctx, n.Name, []string{engine.BinaryPath, "probe", fmt.Sprintf("http://127.0.0.1:%d/health", etcd.ClientPort)})
			if err != nil || res.ExitCode != 0 {
				problems = append(problems, fmt.Sprintf("%s: etcd not healthy (%v %s)", n.Name, err, strings.TrimSpace(res.Stdout+res.Stderr)))
			}
		}
	}
	return problems, nil
}

// imagePresent says whether the daemon has the node image this build runs.
func imagePresent() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := engine.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	tag := images.ImageTag()
	if _, err := cli.ImageInspect(ctx, tag); err != nil {
		return fmt.Errorf("the node image %s is not on the daemon (%v): build it first with check image build", tag, err)
	}
	return nil
}
