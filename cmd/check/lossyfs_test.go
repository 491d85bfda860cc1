package main

import "testing"

// The power faults start the layer with the flags their options ask for
// (nemesis.preparePower): serve must know each.
func TestLossyfsServeTakesThePowerFaultsFlags(t *testing.T) {
	cmd := newLossyfsCmd()
	serve, _, err := cmd.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags([]string{"/data", "/data.disk", "--keep-writes", "--lose-names"}); err != nil {
		t.Fatalf("serve refused the power faults' flags: %v", err)
	}
	for _, f := range []string{"keep-writes", "lose-names"} {
		if v, _ := serve.Flags().GetBool(f); !v {
			t.Errorf("--%s did not set its option", f)
		}
	}
}
