package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// Every fault describes itself, and the words are the ones the docs and
// the stores' run names use.
func TestRegistryDescribesEveryFault(t *testing.T) {
	names := Names()
	if names[0] != None {
		t.Errorf("names start with %q, want none first", names[0])
	}
	for _, want := range []string{"pause", "pause-holder", "pause-server", "pause-leader", "pause-all", "partition", "partition-one",
		"partition-halves", "partition-ring", "partition-bridge", "partition-primary", "partition-client",
		"partition-client-storage", "kill", "kill-leader", "latency"} {
		if !slices.Contains(names, want) {
			t.Errorf("fault %s is not registered (names: %v)", want, names)
		}
	}
	if got := InProcess(); !slices.Equal(got, []string{"pause", "pause-holder"}) {
		t.Errorf("in-process faults %v, want pause, pause-holder", got)
	}
	help := Help()
	for _, n := range names {
		k, _ := Lookup(n)
		if k.Summary == "" || !strings.Contains(help, n+" ") {
			t.Errorf("fault %s has no line in --help: %q", n, help)
		}
	}
}

// Validation asks the registry the question Build asks again.
func TestCheckSaysWhatTheClusterCannotInject(t *testing.T) {
	inProcess := Settings{Backend: "memory"}
	docker := func(servers int) Settings { return Settings{Backend: "x", Docker: true, Servers: servers} }
	for _, tc := range []struct {
		fault string
		s     Settings
		why   string // "" when the fault can be injected
	}{
		{"pause", inProcess, ""},
		{"pause-holder", inProcess, ""},
		{"partition", inProcess, "needs the servers and network of --cluster docker; an in-process run accepts only pause, pause-holder"},
		{"latency", inProcess, "--cluster docker"},
		{"partition", docker(1), "nothing to cut"},
		{"partition-one", docker(1), "nothing to cut"},
		{"partition-client", docker(1), ""},
		{"partition-client-storage", docker(1), ""},
		{"partition-halves", docker(2), ""},
		{"partition-ring", docker(2), "nothing to cut"},
		{"partition-bridge", docker(3), ""},
		{"partition", docker(2), ""},
		{"kill", docker(1), ""},
		{"pause-leader", docker(3), ""},
		{"pause-all", docker(5), ""},
		{"pause-all", inProcess, "--cluster docker"},
	} {
		err := Check(tc.fault, tc.s)
		var un *Unavailable
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%s on %+v: %v", tc.fault, tc.s, err)
		case tc.why != "" && (!errors.As(err, &un) || !strings.Contains(un.Msg, tc.why) || un.Fault != tc.fault):
			t.Errorf("%s on %+v: %v, want an Unavailable saying %q", tc.fault, tc.s, err, tc.why)
		}
	}
}

func TestCheckNamesRefusesBadLists(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, "empty list"},
		{[]string{"pause", "bogus"}, `unknown fault "bogus"`},
		{[]string{"clock"}, "the clock faults are clock-jump"},
		{[]string{"none", "pause"}, "none cannot be combined"},
	} {
		if err := CheckNames(tc.names); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.names, err, tc.want)
		}
	}
	for _, ok := range [][]string{{"none"}, {"pause", "partition", "kill"}} {
		if err := CheckNames(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	if Injects([]string{None}) || !Injects([]string{"pause"}) {
		t.Error("Injects: none injects nothing, pause does")
	}
}

// Pauses last the pause duration; the rest for the interval, never
// shorter than a pause.
func TestFaultDurationAsksEachFault(t *testing.T) {
	s := Settings{PauseDuration: 4 * time.Second, Interval: 10 * time.Second}
	duration := FaultDuration(s)
	for name, want := range map[string]time.Duration{
		"pause": 4 * time.Second, "pause-holder": 4 * time.Second, "pause-server": 4 * time.Second, "pause-leader": 4 * time.Second,
		"pause-all": 4 * time.Second,
		"partition": 10 * time.Second, "kill": 10 * time.Second, "latency": 10 * time.Second,
	} {
		if got := duration(named(name)); got != want {
			t.Errorf("%s lasts %s, want %s", name, got, want)
		}
	}
	s.Interval = time.Second
	if got := FaultDuration(s)(named("partition-one")); got != 4*time.Second {
		t.Errorf("a partition with a short interval lasts %s, want the pause duration", got)
	}
}

type named string

func (n named) Name() string                                        { return string(n) }
func (n named) Start(context.Context, *rand.Rand) ([]string, error) { return nil, nil }
func (n named) Stop(context.Context) error                          { return nil }

// Build makes each fault under its own word (the schedule's events and
// FaultDuration go by it), and refuses what the cluster cannot inject.
func TestBuildMakesEachFaultUnderItsWord(t *testing.T) {
	var observers int
	env := &Env{Settings: Settings{Backend: "x", Docker: true, Servers: 3, Clients: 2, DataDir: "/var/lib/fencecheck/x",
		Failpoints: []string{"raftBeforeSave"}, FailpointPort: 22381, Options: map[string]string{"failpoint": "raftBeforeSave=panic"}}, Claims: &Claims{},
		Observe: func(func(history.Event)) { observers++ }, ServerNodes: []string{"n1", "n2", "n3"}, Storage: "s"}
	for _, n := range Names() {
		if n == None || n == "latency" { // latency probes the nodes first (docker_test.go)
			continue
		}
		fs, err := Build(context.Background(), []string{n}, env)
		if err != nil || len(fs) != 1 || fs[0].Name() != n {
			t.Errorf("%s: built %v, %v", n, fs, err)
		}
	}
	if observers != 3 {
		t.Errorf("%d history observers, want pause-holder's, clock-jump's and clock-jump-quorum's alone (the client partitions' is added at their first start)", observers)
	}
	env.Holders()
	env.Holders()
	if observers != 4 {
		t.Errorf("%d history observers, want one more for the Holders every fault shares", observers)
	}
	if fs, err := Build(context.Background(), []string{None}, env); err != nil || len(fs) != 0 {
		t.Errorf("none built %v, %v", fs, err)
	}
	env.Settings = Settings{Backend: "memory", Clients: 2}
	env.ServerNodes = nil
	var un *Unavailable
	if _, err := Build(context.Background(), []string{"pause", "kill"}, env); !errors.As(err, &un) || un.Fault != "kill" {
		t.Errorf("kill in process: %v, want an Unavailable", err)
	}
	if got, _ := env.Slots(context.Background()); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Errorf("slots %v", got)
	}
}

// A fault's own flag: offered by the CLI, refused without a fault that
// owns it, checked by its fault.
func TestFaultFlags(t *testing.T) {
	saved := kinds
	t.Cleanup(func() { kinds = saved })
	kinds = map[string]Kind{}
	for k, v := range saved {
		kinds[k] = v
	}
	Register(Kind{Name: "flagged", Summary: "a fault with a flag", Flags: []usage.Flag{{Name: "flagged-offset", Usage: "how far",
		Check: func(v string) error {
			if _, err := time.ParseDuration(v); v != "" && err != nil {
				return errors.New("not a duration (e.g. 5s)")
			}
			return nil
		}}},
		Build: func(context.Context, *Env) (Fault, error) { return named("flagged"), nil }})
	if got := Flags(); !slices.ContainsFunc(got, func(f usage.Flag) bool { return f.Name == "flagged-offset" }) || !slices.Equal(FlagOwners("flagged-offset"), []string{"flagged"}) {
		t.Fatalf("flags %+v", got)
	}
	var fe *usage.Error
	if err := CheckFlags([]string{"pause"}, map[string]string{"flagged-offset": "5s"}); !errors.As(err, &fe) || fe.Flag != "flagged-offset" || !strings.Contains(fe.Msg, "--nemesis flagged") {
		t.Errorf("a fault's flag without its fault: %v", err)
	}
	if err := CheckFlags([]string{"flagged"}, map[string]string{"flagged-offset": "soon"}); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "not a duration") {
		t.Errorf("a bad value: %v", err)
	}
	if err := CheckFlags([]string{"flagged"}, map[string]string{"flagged-offset": "5s", "redis-persistence": "aof"}); err != nil {
		t.Errorf("a good value beside a backend's flag: %v", err)
	}
}
