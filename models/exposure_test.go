package models

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

func (b *builder) exposures(t *testing.T) Exposures {
	t.Helper()
	v := history.NewValidator()
	for _, e := range b.events {
		if err := v.Check(e); err != nil {
			t.Fatalf("test history is malformed at index %d: %v", e.Index, err)
		}
	}
	return CountExposures(b.events)
}

func wantCounts(t *testing.T, got, want ExposureCounts) {
	t.Helper()
	if got != want {
		t.Fatalf("exposures %+v, want %+v", got, want)
	}
}

func TestNoFaultNoExposure(t *testing.T) {
	b := newBuilder()
	for i := 0; i < 5; i++ {
		b.section(i, uint64(i+1), int64(i))
	}
	b.finalRead(9, 6, 5)
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{})
	if x.Exercised() {
		t.Fatal("a run without an overlap was counted as exercised")
	}
	if got := NoExposureReason(x.ExposureCounts, RunFacts{Nemesis: []string{"none"}}); !strings.Contains(got, "--nemesis none") {
		t.Fatalf("reason %q does not name --nemesis none", got)
	}
}

// The stale holder's write after its successor's ops: admitted without
// fencing, one exposure.
func TestStaleWriteAdmittedIsAnExposure(t *testing.T) {
	b := staleHistory()
	b.finalRead(9, 6, 4)
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{Exposures: 1, Admitted: 1})
	if len(x.List) != 1 || x.List[0].Process != 2 || x.List[0].Token != 3 || x.List[0].Outcome != ExposureAdmitted {
		t.Fatalf("list %+v, want process 2's token-3 write admitted", x.List)
	}
	if got := x.Text(); got != "1 holder outlived its lease; its late write was admitted" {
		t.Fatalf("text %q", got)
	}
}

// The same history with the storage refusing the stale write.
func TestStaleWriteRefusedIsAnExposure(t *testing.T) {
	b := newBuilder()
	b.section(0, 1, 0)
	b.acquire(2, 3)
	b.read(2, 3, 1)
	b.section(3, 4, 1)
	b.write(2, 3, 1, 2, history.Fail, lockclient.ErrorFenced)
	b.release(2)
	b.section(4, 5, 2)
	b.finalRead(9, 6, 3)
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{Exposures: 1, Refused: 1})
	if got := x.Text(); got != "1 holder outlived its lease; its late op reached the storage and was refused" {
		t.Fatalf("text %q", got)
	}
	if got := x.BoundText(); got != "0 of 1 admitted: at most 95 % per exposure (95 %)" {
		t.Fatalf("bound %q", got)
	}
}

// The careful client: it sees its lease gone and sends nothing.
func TestLeaseLostAfterSuccessorIsNotSent(t *testing.T) {
	b := newBuilder()
	b.acquire(2, 3)
	b.read(2, 3, 0)
	b.section(3, 4, 0)
	b.invoke(2, history.Write, 3, history.Int64(0), history.Int64(1))
	b.complete(2, history.Fail, 3, nil, lockclient.ErrorLeaseLost)
	b.finalRead(9, 6, 1)
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{Exposures: 1, NotSent: 1})
}

// A holder superseded while idle, and one whose late write landed before
// its successor touched the storage: neither is an exposure.
func TestIdleAndAheadAreNotExposures(t *testing.T) {
	b := newBuilder()
	b.acquire(1, 1)
	b.read(1, 1, 0)
	b.acquire(2, 2)                     // 1 is superseded
	b.write(1, 1, 0, 1, history.OK, "") // late, but nothing newer was admitted
	b.release(1)
	b.read(2, 2, 1)
	b.acquire(3, 3) // 2 is superseded and sends nothing more
	b.release(2)
	b.read(3, 3, 1)
	b.write(3, 3, 1, 2, history.OK, "")
	b.release(3)
	b.finalRead(9, 4, 2)
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{Harmless: 1, OutlivedIdle: 1})
	if got := NoExposureReason(x.ExposureCounts, RunFacts{Nemesis: []string{"pause"}, Faults: []history.Fault{{F: "pause", Nodes: []string{"c2"}, Start: 0, End: int64(5 * time.Second)}}, LeaseTTL: 2 * time.Second}); !strings.Contains(got, "outlived by a successor") {
		t.Fatalf("reason %q", got)
	}
}

// Tokenless recipes: the order of grants decides who is newer.
func TestTokenlessStaleWriteIsAdmitted(t *testing.T) {
	b := newBuilder()
	b.acquire(1, 0)
	b.read(1, 0, 0)
	b.acquire(2, 0)
	b.read(2, 0, 0)
	b.write(2, 0, 0, 1, history.OK, "")
	b.release(2)
	b.write(1, 0, 0, 1, history.OK, "")
	b.release(1)
	b.finalRead(9, 0, 1)
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{Exposures: 1, Admitted: 1})
	if x.List[0].Process != 1 {
		t.Fatalf("the exposure is process %d's, want 1's", x.List[0].Process)
	}
}

// A grant with a lower token than one already open (etcd's grant on an
// expired lease) is stale from its start: its refused write is an exposure.
func TestGrantBelowAnOpenTokenIsStaleAtOnce(t *testing.T) {
	b := newBuilder()
	b.acquire(1, 5)
	b.read(1, 5, 0)
	b.acquire(2, 0)
	b.read(2, 0, 0)
	b.write(1, 5, 0, 1, history.OK, "")
	b.release(1)
	b.write(2, 0, 0, 1, history.Fail, lockclient.ErrorFenced)
	b.release(2)
	b.finalRead(9, 6, 1)
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{Exposures: 1, Refused: 1})
}

func TestReconcileMovesAdmittedWhenValid(t *testing.T) {
	x := Exposures{ExposureCounts: ExposureCounts{Exposures: 3, Admitted: 1, Refused: 2}, Keys: []KeyExposures{{Key: "k0", ExposureCounts: ExposureCounts{Exposures: 3, Admitted: 1, Refused: 2}}}, List: []Exposure{{Outcome: ExposureAdmitted}, {Outcome: ExposureRefused}}}
	y := x.Reconcile(Valid)
	wantCounts(t, y.ExposureCounts, ExposureCounts{Exposures: 2, Refused: 2, Harmless: 1})
	wantCounts(t, y.Keys[0].ExposureCounts, ExposureCounts{Exposures: 2, Refused: 2, Harmless: 1})
	if len(y.List) != 1 || x.Keys[0].Admitted != 1 {
		t.Fatal("reconcile must drop the admitted from the list and leave the original alone")
	}
	if z := x.Reconcile(Invalid); z.Admitted != 1 {
		t.Fatal("an invalid run keeps its admitted exposures")
	}
}

func TestExposureTexts(t *testing.T) {
	cases := []struct {
		c          ExposureCounts
		text, shrt string
	}{
		{ExposureCounts{Exposures: 4, Refused: 4}, "4 holders outlived their lease; all 4 late ops reached the storage and were refused", "4 exposures, 4 refused"},
		{ExposureCounts{Exposures: 3, Refused: 1, NotSent: 1, Admitted: 1}, "3 holders outlived their lease: 1 refused by the storage, 1 not sent (the client saw its lease was gone), 1 admitted", "3 exposures, 1 admitted, 1 refused, 1 not sent"},
		{ExposureCounts{Exposures: 2, NotSent: 2, OutlivedIdle: 1}, "2 holders outlived their lease; both saw their lease was gone and did not send their ops (1 more holder was outlived by a successor but sent nothing late)", "2 exposures, 2 not sent"},
		{ExposureCounts{}, "no holder outlived its lease and then acted", "0 exposures"},
	}
	for _, c := range cases {
		if got := c.c.Text(); got != c.text {
			t.Errorf("Text %+v = %q, want %q", c.c, got, c.text)
		}
		if got := c.c.Short(); got != c.shrt {
			t.Errorf("Short %+v = %q, want %q", c.c, got, c.shrt)
		}
	}
	if got := (ExposureCounts{Exposures: 43, Refused: 43}).BoundText(); got != "0 of 43 admitted: at most 6.7 % per exposure (95 %)" {
		t.Errorf("bound %q", got)
	}
	if got := (ExposureCounts{Exposures: 10, Admitted: 5, Refused: 5}).BoundText(); got != "5 of 10 admitted: 50 % per exposure (95 % interval 18.7–81.3 %)" {
		t.Errorf("bound %q", got)
	}
}

func TestNoExposureReasons(t *testing.T) {
	none := ExposureCounts{}
	ttl := 2 * time.Second
	cases := []struct {
		f    RunFacts
		want string
	}{
		{RunFacts{Nemesis: []string{"pause-holder"}}, "pause-holder froze no one"},
		{RunFacts{Nemesis: []string{"kill"}}, "no fault was injected"},
		{RunFacts{Nemesis: []string{"pause"}, Slots: 2, Beliefs: []Belief{{Process: 0, Start: 10, End: 20}},
			Faults: []history.Fault{{F: "pause", Nodes: []string{"c1"}, Start: 30, End: 40}}}, "between their critical sections"},
		{RunFacts{Nemesis: []string{"kill"}, LeaseTTL: ttl,
			Faults: []history.Fault{{F: "kill", Nodes: []string{"n1"}, Start: 0, End: int64(time.Second)}}}, "every fault ended before a lease could run out"},
	}
	for _, c := range cases {
		if got := NoExposureReason(none, c.f); !strings.Contains(got, c.want) {
			t.Errorf("%+v: reason %q, want it to say %q", c.f.Nemesis, got, c.want)
		}
	}
}

// A holder cut off from the lock service sees its lease run out and stops
// before anyone else is granted the lock: it outlived its lease, and its
// own check kept it from acting.
func TestLeaseLostWithoutSuccessorIsNotSent(t *testing.T) {
	b := newBuilder()
	b.acquire(1, 1)
	b.read(1, 1, 0)
	b.invoke(1, history.Write, 1, history.Int64(0), history.Int64(1))
	b.complete(1, history.Fail, 1, nil, lockclient.ErrorLeaseLost)
	b.section(2, 2, 0)
	b.finalRead(9, 3, 1)
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{Exposures: 1, NotSent: 1})
}
