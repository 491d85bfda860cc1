package harness

import (
	"strconv"
	"strings"
	"testing"
)

// A preset as flags (check --preset) and as a Config (bench) are one
// schedule: every flag Flags names has the value Apply gives its field,
// and Apply leaves the rest of the Config, the caller's Options included,
// as they were.
func TestPresetFlagsAndConfigAgree(t *testing.T) {
	for _, keys := range []int{1, 3, CIBound.Keys} {
		given := map[string]string{"redis-persistence": "aof"}
		cfg := Config{Backend: "etcd", LeaseTTL: 1234, Work: 56, Options: given}
		CIBound.Apply(&cfg, keys)
		for _, f := range CIBound.Flags(keys) {
			var got string
			switch f.Name {
			case "fencing":
				got = cfg.Fencing
			case "nemesis":
				got = strings.Join(cfg.Nemesis, ",")
			case "keys":
				got = strconv.Itoa(cfg.Keys)
			case "clients":
				got = strconv.Itoa(cfg.Clients)
			case "holders-at-once", "pause-until":
				got = cfg.Options[f.Name]
			case "nemesis-interval":
				got = cfg.NemesisInterval.String()
			case "time-limit":
				got = cfg.TimeLimit.String()
			default:
				t.Fatalf("Flags names --%s, which Apply does not set", f.Name)
			}
			if got != f.Value {
				t.Errorf("keys %d: --%s %s, the Config has %q", keys, f.Name, f.Value, got)
			}
		}
		if cfg.Keys != keys || cfg.Clients != 2*keys || cfg.Options["holders-at-once"] != strconv.Itoa(keys) {
			t.Errorf("keys %d: keys %d, clients %d, holders at once %s: want one holder and two clients a key", keys, cfg.Keys, cfg.Clients, cfg.Options["holders-at-once"])
		}
		if cfg.Backend != "etcd" || cfg.LeaseTTL != 1234 || cfg.Work != 56 || cfg.Options["redis-persistence"] != "aof" {
			t.Errorf("keys %d: Apply changed what the preset does not set: %+v", keys, cfg)
		}
		if len(given) != 1 {
			t.Errorf("keys %d: Apply wrote into the caller's Options: %v", keys, given)
		}
	}
}
