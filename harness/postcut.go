package harness

import (
	"time"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
)

// A power cut proves something only when it dropped data and the lock
// service granted after it (models.PowerCuts): the faults report what each
// cut dropped, the harness hands it to the verdict and to results.json
// beside the history, which knows when each cut began.

// cutDrops are what the power faults among faults dropped at each cut,
// and when the power went, in the history's time (zero at start).
func cutDrops(faults []nemesis.Fault, start time.Time) []models.Drop {
	var out []models.Drop
	for _, d := range nemesis.DropsOf(faults) {
		md := models.Drop{Fault: d.Fault, Nodes: d.Nodes, Files: d.Files, Bytes: d.Bytes}
		if !d.Went.IsZero() {
			md.Went = max(d.Went.Sub(start).Nanoseconds(), 1)
		}
		out = append(out, md)
	}
	return out
}
