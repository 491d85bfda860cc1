package harness

import (
	"testing"
	"time"
)

// The read mix across the real parts: the built-in agent in its container
// asked for read-lock-free over the client protocol, the storage node's
// HTTP API answering it with every op fenced, a trusting client's holders
// paused past their leases beside it.
func TestDockerMemoryReadMix(t *testing.T) {
	cfg := dockerConfig(t, "memory", "all", "pause")
	cfg.TimeLimit = 8 * time.Second
	cfg.LeaseTTL = time.Second
	cfg.NemesisInterval = time.Second
	cfg.Dwell = 200 * time.Millisecond
	cfg.ReadMix = 0.5
	cfg.LeaseCheck = "none"
	cfg.Seed = 2
	out := runDocker(t, cfg)
	wantMixedRun(t, out, countMix(t, out.Dir))
}
