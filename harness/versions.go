package harness

import (
	"context"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/reports"
)

// How long the servers get to say what they are, once the last fault is
// healed: a node just resumed or restarted may take a moment to answer,
// and one that still does not is recorded as unknown.
// After an interrupt the person wants the run to end: the servers get
// less.
const (
	versionWait            = 10 * time.Second
	versionWaitInterrupted = 2 * time.Second
	versionRetry           = 500 * time.Millisecond
)

// versionAsker is a system whose servers can be asked what they are.
type versionAsker interface {
	// askVersions asks every server node and returns one answer per
	// node, an unknown one for a node that did not answer by ctx's end.
	askVersions(ctx context.Context) []reports.ServerNode
}

// askServers asks the system's servers what they are, for the run's
// results. It never fails the run: a node that does not answer within
// versionWait is recorded as unknown, and a system that cannot be asked
// (none set up, a backend without the question) records nothing.
// After an interrupt the wait is versionWaitInterrupted; a second signal
// (sig.Abort) cuts it short.
func (r *run) askServers() *reports.Servers {
	sys, logf := r.sys, r.logf
	a, ok := sys.(versionAsker)
	if !ok || sys == nil {
		return nil
	}
	wait := versionWait
	if r.stop.Err() != nil {
		wait = versionWaitInterrupted
	}
	ctx, cancel := context.WithTimeout(r.sig.Abort, wait)
	defer cancel()
	nodes := a.askVersions(ctx)
	if len(nodes) == 0 {
		return nil
	}
	b := r.t.info
	server := b.Server
	if server == "" {
		server = r.t.cfg.Backend
	}
	query := b.VersionQuery
	if es, ok := sys.(*endpointsSystem); ok {
		query = es.by.VersionQuery
	}
	out := reports.NewServers(server, query, nodes)
	logf("servers: %s", out.Summary)
	for _, n := range nodes {
		if n.Error != "" {
			logf("asking %s its version: %s", n.Node, n.Error)
		}
	}
	return out
}

// askNode asks one node until it answers or ctx ends, and turns the
// answer (or the last error) into the node's entry.
func askNode(ctx context.Context, node string, ask func(context.Context) (backends.ServerVersion, error)) reports.ServerNode {
	for {
		v, err := ask(ctx)
		if err == nil {
			return reports.ServerNode{Node: node, Version: v.Version, Answer: v.Answer}
		}
		select {
		case <-ctx.Done():
			return reports.ServerNode{Node: node, Version: reports.UnknownVersion, Error: err.Error()}
		case <-time.After(versionRetry):
		}
	}
}

// askVersions asks each server node in parallel, when the backend's
// servers can be asked.
func (s *dockerSystem) askVersions(ctx context.Context) []reports.ServerNode {
	a, ok := s.db.(backends.VersionAsker)
	if !ok {
		return nil
	}
	out := make([]reports.ServerNode, len(s.servers))
	var wg sync.WaitGroup
	for i, n := range s.servers {
		wg.Go(func() {
			out[i] = askNode(ctx, n, func(ctx context.Context) (backends.ServerVersion, error) { return a.AskVersion(ctx, s.nodes, n) })
		})
	}
	wg.Wait()
	return out
}

// inProcessNode names the in-process lock service where a Docker run
// names a server node.
const inProcessNode = "in-process"

// askVersions is the in-process service's answer, when it has one.
func (s inProcess) askVersions(context.Context) []reports.ServerNode {
	a, ok := s.InProcess.(interface{ ServerVersion() backends.ServerVersion })
	if !ok {
		return nil
	}
	v := a.ServerVersion()
	return []reports.ServerNode{{Node: inProcessNode, Version: v.Version, Answer: v.Answer}}
}
