package harness

import (
	"testing"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
)

// The verdict counts the cuts of the faults models knows as power faults;
// the faults that lay the layer and cut are nemesis's. A fault in the
// second list and not the first is never held to a grant after its cuts
// (power-loss-majority was, until this test).
func TestModelsCountEveryPowerFault(t *testing.T) {
	for _, f := range nemesis.PowerFaults {
		if !models.PowerFault(f) {
			t.Errorf("%s cuts the power (nemesis.PowerFaults), but models.PowerFault does not count its cuts", f)
		}
	}
}
