package postgres

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/fencecheck/fencecheck/lockclient"
)

// Waiting for a lock (the lease recipe's busy row, either recipe's server
// being down): a short, growing, jittered wait between tries, and a margin
// before the op's deadline in which no try starts, so that the op ends as
// a definite "not granted" rather than with a statement cut off in flight.
const (
	pollMin    = 2 * time.Millisecond
	pollMax    = 25 * time.Millisecond
	pollMargin = 500 * time.Millisecond
)

// poller spaces the tries of one acquire.
type poller struct {
	wait time.Duration // before the next try; 0 before the first
}

// more waits before the next try and says whether there is time for it.
func (p *poller) more(ctx context.Context) bool {
	if p.wait > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(p.wait/2 + rand.N(p.wait/2+1)):
		}
	}
	p.wait = min(max(2*p.wait, pollMin), pollMax)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < pollMargin {
		return false
	}
	return ctx.Err() == nil
}

// notGranted is an acquire that ran out of time: a definite failure, with
// the last try's error if it was not simply "held".
func notGranted(ctx context.Context, last error) error {
	if last != nil {
		return lockclient.Failf("lock not granted before the op's deadline; last try: %v", last)
	}
	if ctx.Err() != nil {
		return lockclient.Failf("lock not granted: %v", ctx.Err())
	}
	return lockclient.Failf("lock not granted before the op's deadline")
}

// definite tells an error that lockclient.Outcome calls a failure.
func definite(err error) bool {
	typ, _ := lockclient.Outcome(err)
	return typ == lockclient.TypeFail
}
