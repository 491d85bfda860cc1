package nemesis

// This file moves and reads the server nodes' wall clocks, the mechanism
// every clock fault shares (clock.go says how it works: an offset file
// libfaketime re-reads). A move is written through the file alone and
// a reading only logs; neither touches the container's real clock, which
// the host owns.

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// ClockProbe is a lock service that can read a server's own wall clock
// (a backends.DB may have it).
type ClockProbe interface {
	// ClockCommand is a command run in node that prints the server's own
	// wall clock as Unix seconds with a fraction, and what it asks ("Redis
	// TIME").
	ClockCommand(node string) (cmd string, what string)
}

// clocks moves and reads the server nodes' clocks; every clock fault has
// one.
type clocks struct {
	cluster nodes.Nodes
	servers []string
	db      DB
	offset  time.Duration
	log     func(string, ...any)

	mu      sync.Mutex
	moved   []string       // nodes whose file may hold more than the standing offset
	pending sync.WaitGroup // the readings after a move
}

func newClocks(env *Env) *clocks {
	return &clocks{cluster: env.Cluster, servers: env.ServerNodes, db: env.DB, offset: ClockOffset(env.Settings), log: env.logf}
}

// set writes node's offset file: its standing offset plus by.
func (c *clocks) set(ctx context.Context, node string, by time.Duration) error {
	off := formatOffset(standingOffset(c.cluster, node) + by)
	_, err := scriptPatiently(ctx, c.cluster, node, fmt.Sprintf("printf '%%s' %s > %s.tmp && chmod 0644 %[2]s.tmp && mv %[2]s.tmp %[2]s", shellQuote(off), ClockFile), healPatience)
	return err
}

// readAll reads the nodes' server clocks at once.
func (c *clocks) readAll(ctx context.Context, nodes []string) map[string]string {
	var mu sync.Mutex
	out := map[string]string{}
	eachNode(nodes, func(n string) error {
		r := c.read(ctx, n)
		mu.Lock()
		out[n] = r
		mu.Unlock()
		return nil
	})
	return out
}

// move jumps the nodes' clocks by c.offset (on top of their standing
// offsets). before are the server clocks read beforehand (nil reads them
// now). The clocks are read again after the jump in the background, so
// that the fault's interval in the history starts when the jump is in
// place, not one more exec later; restore waits for that reading.
func (c *clocks) move(ctx context.Context, label string, nodes []string, before map[string]string) error {
	c.mu.Lock()
	c.moved = appendOnce(c.moved, nodes...)
	c.mu.Unlock()
	// Docker cannot stop an exec: the files are written whatever happens.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	if before == nil {
		before = c.readAll(ctx, nodes)
	}
	err := eachNode(nodes, func(n string) error {
		if err := c.set(ctx, n, c.offset); err != nil {
			return fmt.Errorf("%s: moving %s's clock: %w", label, n, err)
		}
		return nil
	})
	if err != nil {
		cancel()
		return err
	}
	c.pending.Go(func() {
		defer cancel()
		after := c.readAll(ctx, nodes)
		for _, n := range nodes {
			c.log("%s: %s's clock moved by %s s: server clock %s before, %s after", label, n, formatOffset(c.offset), before[n], after[n])
		}
	})
	return nil
}

// restore writes back the standing offset of every node moved, a jump
// backwards, and reads the clocks again.
func (c *clocks) restore(ctx context.Context, label string) error {
	c.pending.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	left, err := healEach(c.moved, eachNode, func(n string) error {
		if err := c.set(ctx, n, 0); err != nil {
			return fmt.Errorf("%s: putting %s's clock back: %w", label, n, err)
		}
		c.log("%s: %s's clock back to its standing offset %s s (a jump backwards): server clock %s", label, n,
			formatOffset(standingOffset(c.cluster, n)), c.read(ctx, n))
		return nil
	})
	c.moved = left
	return err
}

// read says how far node's server clock is from the node's true time
// ("+6.002 s (Redis TIME)"), or why it could not tell.
func (c *clocks) read(ctx context.Context, node string) string {
	probe, what := "", "a process under the servers' libfaketime"
	if p, ok := c.db.(ClockProbe); ok {
		probe, what = p.ClockCommand(node)
	} else {
		var env []string
		for _, kv := range c.cluster.ServerEnv(node) {
			env = append(env, shellQuote(kv))
		}
		probe = "env " + strings.Join(env, " ") + " date +%s.%N"
	}
	out, err := script(ctx, c.cluster, node, "date +%s.%N; "+probe+"; date +%s.%N")
	if err != nil {
		return fmt.Sprintf("unread (%s: %v)", what, err)
	}
	f := strings.Fields(out)
	var v []float64
	for _, s := range f {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Sprintf("unread (%s printed %q)", what, out)
		}
		v = append(v, x)
	}
	if len(v) != 3 {
		return fmt.Sprintf("unread (%s printed %q)", what, out)
	}
	diff := v[1] - (v[0]+v[2])/2
	return fmt.Sprintf("%+.3f s from true time (%s, ±%.3f s)", diff, what, math.Abs(v[2]-v[0])/2)
}
