package nemesis

import (
	"context"
	"sync"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Holders follows the history to know which client slot holds a lease
// right now: the slot of the last process whose acquire was ok and which
// has not begun to release it since. It is a history observer, as
// PauseHolder is; it never blocks the recorder.
type Holders struct {
	// SlotOf names the slot (container) that runs a client process.
	SlotOf func(process int) string

	mu      sync.Mutex
	held    map[int]int64 // process → index of its ok acquire
	changed chan struct{} // closed and replaced whenever held gains a process
}

func (h *Holders) init() {
	if h.held == nil {
		h.held = map[int]int64{}
		h.changed = make(chan struct{})
	}
}

// Observe notes ok acquires, and forgets a holder when it starts its
// release, learns its lease is lost, or ends an op in info (the process is
// then retired and its slot gets a new one).
func (h *Holders) Observe(e history.Event) {
	if e.IsNemesis() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	switch {
	case e.F == history.Acquire && e.Type == history.OK:
		h.held[e.Process] = e.Index
		close(h.changed)
		h.changed = make(chan struct{})
	case e.F == history.Release && e.Type == history.Invoke,
		e.Type == history.Info,
		e.Type == history.Fail && e.Error == lockclient.ErrorLeaseLost:
		delete(h.held, e.Process)
	}
}

// Current is the slot of the most recent holder, if any holds now.
func (h *Holders) Current() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	best, found := int64(-1), -1
	for p, idx := range h.held {
		if idx > best {
			best, found = idx, p
		}
	}
	if found < 0 {
		return "", false
	}
	return h.SlotOf(found), true
}

// Wait returns the current holder's slot, waiting for one if nobody holds
// a lease now; "" when ctx ends first.
func (h *Holders) Wait(ctx context.Context) string {
	for {
		h.mu.Lock()
		h.init()
		ch := h.changed
		h.mu.Unlock()
		if s, ok := h.Current(); ok {
			return s
		}
		select {
		case <-ctx.Done():
			return ""
		case <-ch:
		}
	}
}
