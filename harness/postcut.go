package harness

import (
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
)

// A power cut proves something only when it dropped data and the lock
// service granted after it (models.PowerCuts): the faults report what each
// cut dropped, the harness hands it to the verdict and to results.json
// beside the history, which knows when each cut began.

// cutDrops are what the power faults among faults dropped at each cut.
func cutDrops(faults []nemesis.Fault) []models.Drop {
	var out []models.Drop
	for _, d := range nemesis.DropsOf(faults) {
		out = append(out, models.Drop{Fault: d.Fault, Nodes: d.Nodes, Files: d.Files, Bytes: d.Bytes})
	}
	return out
}
