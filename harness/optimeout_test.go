package harness

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

// An op that outlives --op-timeout ends in info, and its error says that
// the op timeout ran out, not a bare "context deadline exceeded"; an info
// for another reason keeps its own words.
func TestOpTimeoutIsNamedInTheUnknownOutcome(t *testing.T) {
	cfg := &Config{OpTimeout: 50 * time.Millisecond}
	w := &worker{process: 1, slots: 1, rec: history.NewRecorder(io.Discard), cfg: cfg}
	done, ok, info := w.op(history.Event{F: history.Read, Key: "k0"}, func(ctx context.Context) (history.Event, error) {
		<-ctx.Done()
		return history.Event{}, ctx.Err()
	})
	if ok || !info || done.Type != history.Info {
		t.Fatalf("a timed-out op ended %s (ok %v, info %v), want info", done.Type, ok, info)
	}
	if want := "no answer within --op-timeout 50ms, so the outcome is unknown: context deadline exceeded"; done.Error != want {
		t.Errorf("error %q, want %q", done.Error, want)
	}
	done, _, _ = w.op(history.Event{F: history.Read, Key: "k0"}, func(context.Context) (history.Event, error) {
		return history.Event{}, errors.New("connection reset by peer")
	})
	if done.Type != history.Info || strings.Contains(done.Error, "op-timeout") {
		t.Errorf("an info op that did not time out: %s %q", done.Type, done.Error)
	}
}
