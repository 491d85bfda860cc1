package harness

import (
	"strconv"
	"time"

	"github.com/fencecheck/fencecheck/nemesis"
)

// Preset is a schedule a run can start from: `check --preset` sets it as
// flags (Flags), a benchmark as a Config (Apply), from the same values.
type Preset struct {
	Name    string
	Fencing string
	Nemesis string
	// Keys is --keys when not given; the clients (ClientsPerKey a key)
	// and the holders frozen at once (one a key) follow the keys run.
	Keys            int
	ClientsPerKey   int
	PauseUntil      string
	NemesisInterval time.Duration
	TimeLimit       time.Duration
}

// CIBound is `check --preset ci-bound` (docs/results.md, "A bound per
// minute"): the fastest schedule that still exposes holders faithfully,
// for a CI job that wants the tightest bound a few minutes can buy.
//
// Every exposure it counts is still a holder frozen past its lease, its
// successor granted and its late op sent: it only runs several of them at
// once (one per key, --holders-at-once), thaws each as soon as its
// successor has read under the lock (--pause-until granted) and rests
// less between freezes (--nemesis-interval 500ms). Ten keys carry ten
// frozen holders at once, which on etcd gave about 166 exposures a
// minute; three minutes at about 160 a minute bound the admitted share
// under 1 % (95 %).
var CIBound = Preset{
	Name:    "ci-bound",
	Fencing: "all",
	Nemesis: nemesis.PauseHolderName,
	Keys:    10,
	// Two clients a key: one frozen holder, one successor.
	ClientsPerKey:   2,
	PauseUntil:      nemesis.PauseUntilGranted,
	NemesisInterval: 500 * time.Millisecond,
	TimeLimit:       3 * time.Minute,
}

// PresetFlag is one flag a preset sets, as a command line gives it.
type PresetFlag struct{ Name, Value string }

// Flags are p's flags with keys keys, in the order a command line sets
// them.
func (p Preset) Flags(keys int) []PresetFlag {
	return []PresetFlag{
		{"fencing", p.Fencing},
		{"nemesis", p.Nemesis},
		{"keys", strconv.Itoa(keys)},
		{"clients", strconv.Itoa(p.ClientsPerKey * keys)},
		{"holders-at-once", strconv.Itoa(keys)},
		{"pause-until", p.PauseUntil},
		{"nemesis-interval", p.NemesisInterval.String()},
		{"time-limit", p.TimeLimit.String()},
	}
}

// Apply sets cfg's fields to p's with keys keys: what Flags says, as a
// Config. Everything else in cfg stays as it is.
func (p Preset) Apply(cfg *Config, keys int) {
	cfg.Fencing, cfg.Nemesis = p.Fencing, []string{p.Nemesis}
	cfg.Keys, cfg.Clients = keys, p.ClientsPerKey*keys
	opts := make(map[string]string, len(cfg.Options)+2)
	for k, v := range cfg.Options {
		opts[k] = v
	}
	opts["holders-at-once"], opts["pause-until"] = strconv.Itoa(keys), p.PauseUntil
	cfg.Options = opts
	cfg.NemesisInterval, cfg.TimeLimit = p.NemesisInterval, p.TimeLimit
}
