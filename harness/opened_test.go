package harness

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/memory"
	"github.com/fencecheck/fencecheck/history"
)

// slowOpen is the in-process system whose clients take a while to open,
// as an agent started in a container does.
type slowOpen struct {
	inProcess
	started atomic.Int32
}

func (s *slowOpen) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	time.Sleep(50 * time.Millisecond)
	c, err := s.inProcess.NewClient(ctx, slot)
	s.started.Add(1)
	return c, err
}

// The nemesis waits for workload.opened, so it must not be closed before
// every slot's client is open: a slot frozen while its agent is starting
// never starts (a pause that landed 1.2 s into a run left slots that never
// ran, with no error).
func TestWorkloadSaysWhenEveryClientIsOpen(t *testing.T) {
	cfg, err := checked(memoryConfig(t, "all", "none"))
	if err != nil {
		t.Fatal(err)
	}
	sys := &slowOpen{inProcess: inProcess{InProcess: memory.NewInProcess(cfg.LeaseTTL, "all")}}
	wl := workload{cfg: &cfg, sys: sys, rec: history.NewRecorder(io.Discard), logf: t.Logf, opened: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := wl.run(ctx); done <- err }()
	select {
	case <-wl.opened:
		if n := int(sys.started.Load()); n != cfg.Clients {
			t.Errorf("opened was closed with %d of %d clients open", n, cfg.Clients)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opened was never closed")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
