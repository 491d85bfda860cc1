package harness

import (
	"context"
	"errors"

	"github.com/fencecheck/fencecheck/backends/memory"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/nemesis"
)

// buildFaults turns --nemesis into faults over sys.
func buildFaults(cfg *Config, sys System, rec *history.Recorder) ([]nemesis.Fault, error) {
	var out []nemesis.Fault
	slots := func(context.Context) ([]string, error) {
		var ts []string
		for i := 1; i <= cfg.Clients; i++ {
			ts = append(ts, memory.SlotName(i))
		}
		return ts, nil
	}
	for _, f := range cfg.Nemesis {
		switch f {
		case "none":
		case "pause":
			out = append(out, &nemesis.Pause{Label: "pause", Freezer: sys.Freezer(), Targets: slots})
		case "pause-holder":
			ph := &nemesis.PauseHolder{Freezer: sys.Freezer(), TargetOf: func(p int) string { return memory.SlotName(p%cfg.Clients + 1) }}
			rec.Observe(ph.Observe)
			out = append(out, ph)
		default:
			return nil, errors.New("fault " + f + " is not available for this backend")
		}
	}
	return out, nil
}
