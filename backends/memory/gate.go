package memory

import "sync"

// Gate is an in-process freezer: while it is shut, every goroutine of a
// client that passes through Wait stops, as every thread of a process stops
// under SIGSTOP or the cgroup freezer.
type Gate struct {
	mu     sync.Mutex
	frozen chan struct{} // nil when open; closed on thaw
}

// Freeze shuts the gate. Freezing a frozen gate does nothing.
func (g *Gate) Freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen == nil {
		g.frozen = make(chan struct{})
	}
}

// Thaw opens the gate and lets every waiter go on.
func (g *Gate) Thaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen != nil {
		close(g.frozen)
		g.frozen = nil
	}
}

// Wait returns at once when the gate is open, and otherwise when it opens.
// It has no deadline: a frozen process does not notice its own deadlines,
// it only finds them passed when it wakes.
func (g *Gate) Wait() {
	for {
		g.mu.Lock()
		ch := g.frozen
		g.mu.Unlock()
		if ch == nil {
			return
		}
		<-ch
	}
}
