package nemesis

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

// The clock faults are refused, with the reason, where libfaketime cannot
// reach the servers; elsewhere they need only a Docker cluster.
func TestClockFaultsRefuseWhatLibfaketimeCannotReach(t *testing.T) {
	for _, fault := range []string{"clock-jump", "clock-skew", "clock-strobe", "clock-jump-quorum"} {
		for _, tc := range []struct {
			s   Settings
			why string
		}{
			// The backend says why (backends/etcd, backends/memory); nemesis
			// refuses with its words.
			{Settings{Backend: "etcd", Docker: true, Servers: 3, NoClockFaults: "etcd is a static Go binary"}, "static Go binary"},
			{Settings{Backend: "memory", Docker: true, Servers: 1, NoClockFaults: "a static Go binary"}, "static Go binary"},
			{Settings{Backend: "memory"}, "--cluster docker"},
			{Settings{Backend: "redis", Docker: true, Servers: 5}, ""},
			{Settings{Backend: "zookeeper", Docker: true, Servers: 3}, ""},
		} {
			err := Check(fault, tc.s)
			var un *Unavailable
			switch {
			case tc.why == "" && err != nil:
				t.Errorf("%s on %s: %v", fault, tc.s.Backend, err)
			case tc.why != "" && (!errors.As(err, &un) || !strings.Contains(un.Msg, tc.why)):
				t.Errorf("%s on %s (docker %v): %v, want an Unavailable saying %q", fault, tc.s.Backend, tc.s.Docker, err, tc.why)
			}
		}
	}
	// Kleppmann's case needs a majority that is not everyone.
	if err := Check("clock-jump-quorum", Settings{Backend: "redis", Docker: true, Servers: 1}); err == nil || !strings.Contains(err.Error(), "at least 3") {
		t.Errorf("clock-jump-quorum on one server: %v, want a refusal", err)
	}
	if err := Check("clock-jump", Settings{Backend: "redis", Docker: true, Servers: 1, Options: map[string]string{"clock-targets": "minority"}}); err == nil {
		t.Error("clock-jump --clock-targets minority on one server was accepted")
	}
	if err := CheckNames([]string{"clock"}); err == nil || !strings.Contains(err.Error(), "clock-jump") {
		t.Errorf("--nemesis clock: %v, want a pointer to the clock faults", err)
	}
}

func TestClockFlags(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		ok   bool
	}{
		{map[string]string{"clock-offset": "6s"}, true},
		{map[string]string{"clock-offset": "-2500ms"}, true},
		{map[string]string{"clock-offset": "0s"}, false},
		{map[string]string{"clock-offset": "soon"}, false},
		{map[string]string{"clock-targets": "majority"}, true},
		{map[string]string{"clock-targets": "most"}, false},
		{map[string]string{"clock-strobe-period": "5ms"}, false},
	} {
		err := CheckFlags([]string{"clock-jump", "clock-strobe"}, tc.opts)
		if (err == nil) != tc.ok {
			t.Errorf("%v: %v, want ok=%v", tc.opts, err, tc.ok)
		}
	}
	if err := CheckFlags([]string{"pause"}, map[string]string{"clock-offset": "6s"}); err == nil || !strings.Contains(err.Error(), "clock-jump") {
		t.Errorf("--clock-offset without a clock fault: %v", err)
	}
}

func TestClockOffsets(t *testing.T) {
	s := Settings{LeaseTTL: 2 * time.Second}
	if got := ClockOffset(s); got != 6*time.Second {
		t.Errorf("default offset %s, want 3 × the lease", got)
	}
	s.Options = map[string]string{"clock-offset": "-4s"}
	if got := ClockOffset(s); got != -4*time.Second {
		t.Errorf("offset %s, want -4s", got)
	}
	for d, want := range map[time.Duration]string{6 * time.Second: "+6.000", -1500 * time.Millisecond: "-1.500", 0: "+0.000"} {
		if got := formatOffset(d); got != want {
			t.Errorf("formatOffset(%s) = %q, want %q", d, got, want)
		}
	}
	s.Options = map[string]string{"clock-offset": "4s"}
	if got := skewOffsets(s, 5); !slices.Equal(got, []time.Duration{-4 * time.Second, -2 * time.Second, 0, 2 * time.Second, 4 * time.Second}) {
		t.Errorf("skew over 5: %v", got)
	}
	if got := skewOffsets(s, 1); !slices.Equal(got, []time.Duration{4 * time.Second}) {
		t.Errorf("skew over 1: %v", got)
	}
}

func TestClockTargetSets(t *testing.T) {
	five := []string{"n1", "n2", "n3", "n4", "n5"}
	rng := rand.New(rand.NewPCG(1, 2))
	for set, want := range map[string]int{"one": 1, "minority": 2, "majority": 3, "all": 5} {
		for range 10 {
			if got := pickTargets(rng, five, set); len(got) != want || !slices.IsSorted(got) {
				t.Errorf("%s of 5: %v", set, got)
			}
		}
	}
	sizes := map[int]bool{}
	for range 200 {
		sizes[len(pickTargets(rng, five, ""))] = true
	}
	if len(sizes) != 4 {
		t.Errorf("random draws gave sizes %v, want 1, 2, 3 and 5", sizes)
	}
	if got := pickTargets(rng, []string{"n1"}, "majority"); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("majority of one: %v", got)
	}
}

// The libfaketime offset file is rewritten by rename, so a server never
// reads it half-written, and the preload finds both libraries.
func TestPrepareScript(t *testing.T) {
	s := prepareScript("+0.000")
	for _, want := range []string{"mv " + ClockFile + ".tmp " + ClockFile, "libfaketimeMT.so.1", "libc_malloc_debug.so.0", "'+0.000'"} {
		if !strings.Contains(s, want) {
			t.Errorf("prepare script lacks %q:\n%s", want, s)
		}
	}
}

// clock-jump's aim: the jump is made while the holder waits at its write
// failpoint, and the holder's write goes out once another client has
// taken the lock.
func TestClockAimJumpsAtTheFailpointAndWaitsForATakeover(t *testing.T) {
	a := &clockAim{holderAim{Claims: &Claims{}}, takeoverWait{MaxWait: 5 * time.Second}}
	jumped := make(chan struct{})
	done := make(chan bool, 1)
	go func() {
		ok, err := a.at(t.Context(), func() error { close(jumped); return nil })
		done <- ok && err == nil
	}()
	for !a.armed.Load() {
		time.Sleep(time.Millisecond)
	}
	a.Observe(history.Event{Process: 1, Type: history.OK, F: history.Read})
	hook := a.Claims.Hook(1, 5*time.Second)
	if hook == nil {
		t.Fatal("the reader was not claimed")
	}
	wrote := make(chan struct{})
	go func() { hook("write-checked"); close(wrote) }()
	<-jumped
	select {
	case <-wrote:
		t.Fatal("the holder wrote before anyone took over")
	case <-time.After(50 * time.Millisecond):
	}
	a.Observe(history.Event{Process: 1, Type: history.OK, F: history.Read}) // itself: no takeover
	a.Observe(history.Event{Process: 2, Type: history.OK, F: history.Acquire})
	select {
	case <-wrote:
		t.Fatal("the holder wrote before the new holder read")
	case <-time.After(50 * time.Millisecond):
	}
	a.Observe(history.Event{Process: 2, Type: history.OK, F: history.Read})
	select {
	case <-wrote:
	case <-time.After(2 * time.Second):
		t.Fatal("the holder was not let go after the takeover")
	}
	if !<-done {
		t.Error("at reported no jump")
	}
}
