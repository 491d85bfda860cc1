package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// healPatience is how long a heal keeps retrying a node Docker refuses to
// exec into (a paused node answers with a conflict until it is resumed).
const healPatience = 10 * time.Second

// script runs sh -c script in node with every capability the engine can
// grant (at least NET_ADMIN) and returns its stdout. A script that exits
// non-zero is an error carrying its stderr.
func script(ctx context.Context, c nodes.Nodes, node, text string) (string, error) {
	res, err := c.ExecPrivileged(ctx, node, []string{"sh", "-c", text})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return res.Stdout, &scriptError{node: node, code: res.ExitCode, stderr: strings.TrimSpace(res.Stderr + " " + res.Stdout)}
	}
	return res.Stdout, nil
}

// scriptError is a command that ran and failed, as opposed to one Docker
// could not run (a paused or missing node): retrying it does not help.
type scriptError struct {
	node   string
	code   int
	stderr string
}

func (e *scriptError) Error() string {
	return fmt.Sprintf("in %s: exit %d: %s", e.node, e.code, e.stderr)
}

// scriptPatiently is script for healing: while Docker cannot exec into the
// node (it is paused, the daemon is busy) it retries for up to patience,
// even past ctx's end when ctx was already cancelled by an interrupt.
func scriptPatiently(ctx context.Context, c nodes.Nodes, node, text string, patience time.Duration) (string, error) {
	deadline := time.Now().Add(patience)
	delay := 100 * time.Millisecond
	for {
		out, err := script(ctx, c, node, text)
		var se *scriptError
		if err == nil || errors.As(err, &se) || time.Now().After(deadline) || ctx.Err() != nil {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// eachNode runs f for every node (or container) at once, one goroutine
// each, so that the engine's tens of milliseconds per call do not stagger
// them, and joins their errors.
func eachNode(nodes []string, f func(node string) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = f(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// inTurn runs f for every node one after another and joins their
// errors: eachNode's sibling for a heal that must not run at once.
func inTurn(nodes []string, f func(node string) error) error {
	var errs []error
	for _, n := range nodes {
		errs = append(errs, f(n))
	}
	return errors.Join(errs...)
}

// healEach heals every node, through run (eachNode: all at once; inTurn:
// one after another), and returns the nodes it failed on, for the fault
// to keep and try again on its next Stop, with the errors joined: a node
// whose heal failed is never forgotten, since a node left cut off, frozen,
// killed or skewed would spoil what runs after.
func healEach(nodes []string, run func([]string, func(string) error) error, heal func(node string) error) (left []string, err error) {
	var mu sync.Mutex
	err = run(nodes, func(n string) error {
		err := heal(n)
		if err != nil {
			mu.Lock()
			left = append(left, n)
			mu.Unlock()
		}
		return err
	})
	return left, err
}

// ipOf is the address a node's peers reach it at.
func ipOf(c nodes.Nodes, node string) (string, error) {
	n, err := c.Node(node)
	if err != nil {
		return "", err
	}
	if n.IP == "" {
		return "", fmt.Errorf("node %s of test %s has no address", node, c.ID())
	}
	return n.IP, nil
}

// appendOnce adds s to list unless it is there already.
func appendOnce(list []string, s ...string) []string {
	for _, x := range s {
		found := false
		for _, y := range list {
			if x == y {
				found = true
				break
			}
		}
		if !found {
			list = append(list, x)
		}
	}
	return list
}
