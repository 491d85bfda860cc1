package harness

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// A process whose op ended in info is retired and its slot goes on as a
// new process with a new client (worker.retire), which the slot's next
// acquire opens, within that acquire's deadline (--op-timeout, not the
// shorter --acquire-timeout: a client's start is not its acquire). Under
// a fault that takes every server down (power-loss-all, pause-all, a
// failpoint on every node) the new client may be unable to connect, and a
// client that cannot connect refuses at init (docs/client-protocol.md).
// At a slot's first open a refusal means the setup is wrong, and the run
// stops. A replacement's refusal is read by when it comes: the same setup
// opened before, so the service is down right now, most likely by the
// test's own fault. The acquire then fails definitely — no client existed
// to take the lock — with an error starting history.OpenFailed, and the
// slot's next acquire tries again, until the fault heals and a client
// opens, or the workload ends. The history and the summary count these
// failed opens and the time they took.

// openRetryWait is the wait between a failed open and the next.
const openRetryWait = 500 * time.Millisecond

// reopen opens the slot's client within ctx, the acquire op's; an open
// that fails is the acquire's definite failure, after openRetryWait (so
// the op's interval covers the time the slot spent without a client).
func (w *worker) reopen(ctx context.Context) error {
	c, err := w.sys.NewClient(withProcess(ctx, w.process), w.slot)
	if err != nil {
		select {
		case <-ctx.Done():
		case <-time.After(openRetryWait):
		}
		if w.openFailed != w.process {
			w.openFailed = w.process
			w.logf("slot %s: process %d's client could not open (%v); its acquires open one until the service answers", history.SlotName(w.slot), w.process, err)
		}
		return lockclient.Failf("%s: process %d's client could not open: %v", history.OpenFailed, w.process, err)
	}
	w.client = c
	if w.openFailed == w.process {
		w.logf("slot %s: process %d's client opened", history.SlotName(w.slot), w.process)
	}
	return nil
}

// closeClient closes the slot's client, if it has one.
func (w *worker) closeClient() {
	if w.client != nil {
		w.client.Close()
	}
}
