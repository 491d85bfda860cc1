package compare

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/usage"
)

// The jepsen-etcd preset mixes lock-free reads in (0.5); --read-mix
// overrides it, 0 included, and reaches every cell's configuration and the
// matrix's definition (so shards of another mix do not merge).
func TestReadMixPresetAndOverride(t *testing.T) {
	mixOf := func(spec Spec) (float64, string) {
		t.Helper()
		m, err := Expand(spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg := m.Config(m.Rows[0], m.Faults[0], 0, "/s")
		def := ""
		for _, f := range m.Definition() {
			if f.Flag == "read-mix" {
				def = f.Value
			}
		}
		return cfg.ReadMix, def
	}
	zero, quarter := 0.0, 0.25
	for _, tc := range []struct {
		spec    Spec
		want    float64
		wantDef string
	}{
		{Spec{Preset: "jepsen-etcd"}, 0.5, "0.5"},
		{Spec{Preset: "jepsen-etcd", ReadMix: &zero}, 0, "0"},
		{Spec{Preset: "jepsen-etcd", ReadMix: &quarter}, 0.25, "0.25"},
		{Spec{Preset: "quick"}, 0, "0"},
		{Spec{Preset: "quick", ReadMix: &quarter}, 0.25, "0.25"},
	} {
		if got, def := mixOf(tc.spec); got != tc.want || def != tc.wantDef {
			t.Errorf("preset %q, --read-mix %v: the cells run %v (definition %q), want %v", tc.spec.Preset, tc.spec.ReadMix, got, def, tc.want)
		}
	}
	one := 1.0
	if _, err := Expand(Spec{Preset: "quick", ReadMix: &one}); err == nil || !strings.Contains(err.Error(), "--read-mix") {
		t.Errorf("--read-mix 1: %v, want a refusal naming --read-mix", err)
	}
}

// A user client is not asked for lock-free reads: its rows are refused
// with the mix, the preset's included, saying how to run them.
func TestReadMixRefusedForClientRows(t *testing.T) {
	dir := "../examples/clients/redislock"
	half := 0.5
	_, err := Expand(Spec{Clients: []string{"redis:" + dir}, ReadMix: &half})
	var ue *usage.Error
	if !errors.As(err, &ue) || ue.Flag != "read-mix" || !strings.Contains(err.Error(), "--read-mix 0") {
		t.Errorf("--client with --read-mix 0.5: %v", err)
	}
	_, err = Expand(Spec{Preset: "jepsen-etcd", Clients: []string{"etcd:" + dir}})
	if err == nil || !strings.Contains(err.Error(), "jepsen-etcd preset's read mix") {
		t.Errorf("--client with the jepsen-etcd preset: %v", err)
	}
	zero := 0.0
	if _, err := Expand(Spec{Clients: []string{"redis:" + dir}, ReadMix: &zero}); err != nil {
		t.Errorf("--client with --read-mix 0: %v", err)
	}
}
