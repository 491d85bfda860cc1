package models

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

func (b *builder) release(p int) {
	b.invoke(p, history.Release, 0, nil, nil)
	b.complete(p, history.OK, 0, nil, "")
}

// section is a whole lock → read → write → release with nothing concurrent.
func (b *builder) section(p int, token uint64, v int64) {
	b.acquire(p, token)
	b.read(p, token, v)
	b.write(p, token, v, v+1, history.OK, "")
	b.release(p)
}

// finalRead is the harness's final read: a new process takes a fresh lock
// and reads.
func (b *builder) finalRead(p int, token uint64, v int64) {
	b.acquire(p, token)
	b.read(p, token, v)
	b.release(p)
}

// rekey moves the events from index from on to key.
func (b *builder) rekey(from int, key string) {
	for i := from; i < len(b.events); i++ {
		b.events[i].Key = key
	}
}

func (b *builder) damage(t *testing.T) Damage {
	t.Helper()
	v := history.NewValidator()
	for _, e := range b.events {
		if err := v.Check(e); err != nil {
			t.Fatalf("test history is malformed at index %d: %v", e.Index, err)
		}
	}
	ops, _ := history.Pair(b.events)
	return ComputeDamage(ops)
}

func wantLost(t *testing.T, what string, lo, hi *int, wantLo, wantHi int) {
	t.Helper()
	if lo == nil || hi == nil {
		t.Fatalf("%s: lost updates not told, want %d–%d", what, wantLo, wantHi)
	}
	if *lo != wantLo || *hi != wantHi {
		t.Fatalf("%s: lost %d–%d, want %d–%d", what, *lo, *hi, wantLo, wantHi)
	}
}

// staleHistory: process 2 reads 2 under token 3, is frozen past its lease,
// process 3 takes token 4, reads 2 and writes 3; process 2 wakes and
// writes 3 as well (stale, accepted). One of the five acknowledged writes
// is lost, exactly.
func staleHistory() *builder {
	b := newBuilder()
	b.section(0, 1, 0)
	b.section(1, 2, 1)
	b.acquire(2, 3)
	b.read(2, 3, 2)
	b.section(3, 4, 2)
	b.write(2, 3, 2, 3, history.OK, "")
	b.release(2)
	b.section(4, 5, 3)
	return b
}

func TestDamageExactLostUpdate(t *testing.T) {
	b := staleHistory()
	b.finalRead(9, 6, 4)
	d := b.damage(t)
	if d.Acknowledged != 5 || d.UnknownWrites != 0 {
		t.Fatalf("acknowledged %d, unknown %d; want 5, 0", d.Acknowledged, d.UnknownWrites)
	}
	wantLost(t, "run", d.LostMin, d.LostMax, 1, 1)
	if d.LostShareMin == nil || *d.LostShareMin != 0.2 || *d.LostShareMax != 0.2 {
		t.Fatalf("lost share %v–%v, want 0.2", d.LostShareMin, d.LostShareMax)
	}
	if d.StaleWritesAccepted != 1 || d.StaleRefused != 0 {
		t.Fatalf("stale accepted %d, refused %d; want 1, 0", d.StaleWritesAccepted, d.StaleRefused)
	}
	// Process 2 believed it held the lease from its acquire to its
	// release; process 3's belief lies inside that: from its acquire's
	// completion to its release's invoke, 5 ticks of 100 ms.
	if d.Overlaps != 1 || d.OverlapS < 0.49 || d.OverlapS > 0.51 {
		t.Fatalf("overlaps %d for %.3f s, want 1 for 0.5 s", d.Overlaps, d.OverlapS)
	}
	k := d.Keys[0]
	if k.Final != FinalOK || k.FinalValue == nil || *k.FinalValue != 4 || k.Note != "" {
		t.Fatalf("final %s %v note %q, want ok 4 and no note", k.Final, k.FinalValue, k.Note)
	}
	if got := d.Text(); !strings.Contains(got, "lost 1 of 5 acknowledged updates (20%)") || !strings.Contains(got, "1 stale write accepted") {
		t.Fatalf("text %q", got)
	}
}

// A holder frozen inside its write (invoked before the newer holder's
// read, answered after it) wrote stale: counted.
func TestDamageStaleWriteFrozenInFlight(t *testing.T) {
	b := newBuilder()
	b.section(0, 1, 0)
	b.acquire(1, 2)
	b.read(1, 2, 1)
	b.invoke(1, history.Write, 2, history.Int64(1), history.Int64(2)) // frozen here
	b.section(2, 3, 1)
	b.complete(1, history.OK, 0, nil, "")
	b.release(1)
	b.finalRead(9, 4, 2)
	d := b.damage(t)
	if d.StaleWritesAccepted != 1 {
		t.Fatalf("stale accepted %d, want 1", d.StaleWritesAccepted)
	}
	wantLost(t, "run", d.LostMin, d.LostMax, 1, 1)
}

func TestDamageNothingLost(t *testing.T) {
	b := newBuilder()
	for i := 0; i < 4; i++ {
		b.section(i, uint64(i+1), int64(i))
	}
	b.finalRead(9, 9, 4)
	d := b.damage(t)
	wantLost(t, "run", d.LostMin, d.LostMax, 0, 0)
	if d.Acknowledged != 4 || d.StaleWritesAccepted != 0 || d.Overlaps != 0 || d.OverlapS != 0 {
		t.Fatalf("damage %+v, want 4 acknowledged and nothing else", d)
	}
}

// With fencing, the stale write is refused: counted as refused, not as
// acknowledged, and nothing is lost.
func TestDamageFencedWriteIsRefusedNotLost(t *testing.T) {
	b := newBuilder()
	b.section(0, 1, 0)
	b.acquire(1, 2)
	b.read(1, 2, 1)
	b.section(2, 3, 1)
	b.write(1, 2, 1, 2, history.Fail, lockclient.ErrorFenced)
	b.release(1)
	b.finalRead(9, 4, 2)
	d := b.damage(t)
	wantLost(t, "run", d.LostMin, d.LostMax, 0, 0)
	if d.Acknowledged != 2 || d.StaleRefused != 1 || d.StaleWritesAccepted != 0 {
		t.Fatalf("acknowledged %d, refused %d, stale accepted %d; want 2, 1, 0", d.Acknowledged, d.StaleRefused, d.StaleWritesAccepted)
	}
}

// A write of unknown outcome may be the one whose effect survived: the
// count of lost acknowledged writes becomes a range.
func TestDamageUnknownWriteGivesARange(t *testing.T) {
	b := newBuilder()
	b.section(0, 1, 0) // 1
	b.section(1, 2, 1) // 2
	b.acquire(2, 3)
	b.read(2, 3, 2)
	b.write(2, 3, 2, 3, history.Info, "") // 3?, process 2 retired
	b.section(7, 4, 2)                    // 3, ok: it read 2 as well
	b.section(3, 5, 3)                    // 4
	b.finalRead(9, 6, 4)
	d := b.damage(t)
	if d.Acknowledged != 4 || d.UnknownWrites != 1 {
		t.Fatalf("acknowledged %d, unknown %d; want 4, 1", d.Acknowledged, d.UnknownWrites)
	}
	// Value 3 was stored by the ok write or the unknown one: the ok write
	// to 3 is lost if the unknown write is the one that survived.
	wantLost(t, "run", d.LostMin, d.LostMax, 0, 1)
	if got := d.LostText(); !strings.Contains(got, "lost 0–1 of 4 acknowledged updates (0–25%), 1 write of unknown outcome") {
		t.Fatalf("lost text %q", got)
	}

	// An unknown write to a value the final read does not reach changes
	// nothing; one to a value only it wrote is the survivor for that value.
	b = newBuilder()
	b.section(0, 1, 0)
	b.acquire(1, 2)
	b.read(1, 2, 1)
	b.write(1, 2, 1, 2, history.Info, "")
	b.section(6, 3, 2) // read the unknown write's 2: it applied
	b.finalRead(9, 4, 3)
	d = b.damage(t)
	wantLost(t, "applied unknown write", d.LostMin, d.LostMax, 0, 0)
}

func TestDamageMissingAndUnknownFinalReads(t *testing.T) {
	// No final read at all: say so, count nothing lost.
	b := staleHistory()
	d := b.damage(t)
	if d.LostMin != nil || d.LostMax != nil || d.LostShareMin != nil || d.Measured != 0 {
		t.Fatalf("lost %v–%v share %v measured %d without a final read, want none", d.LostMin, d.LostMax, d.LostShareMin, d.Measured)
	}
	if k := d.Keys[0]; k.Final != FinalMissing || !strings.Contains(k.Note, "final read missing") {
		t.Fatalf("final %s note %q, want missing", k.Final, k.Note)
	}
	if got := d.LostText(); !strings.Contains(got, "lost updates unknown") || !strings.Contains(got, "final read missing") {
		t.Fatalf("lost text %q", got)
	}
	// The other figures do not need the final read.
	if d.Acknowledged != 5 || d.StaleWritesAccepted != 1 {
		t.Fatalf("acknowledged %d, stale accepted %d; want 5, 1", d.Acknowledged, d.StaleWritesAccepted)
	}

	// The final acquire was not granted.
	b = staleHistory()
	b.invoke(9, history.Acquire, 0, nil, nil)
	b.complete(9, history.Fail, 0, nil, "lock not granted")
	d = b.damage(t)
	if k := d.Keys[0]; k.Final != FinalMissing || k.LostMin != nil {
		t.Fatalf("final %s lost %v, want missing and none", k.Final, k.LostMin)
	}

	// The final read timed out: unknown, not a guess.
	b = staleHistory()
	b.acquire(9, 6)
	b.invoke(9, history.Read, 6, nil, nil)
	b.complete(9, history.Info, 0, nil, "timeout")
	d = b.damage(t)
	if k := d.Keys[0]; k.Final != FinalUnknown || k.LostMin != nil || !strings.Contains(k.Note, "did not return a value") {
		t.Fatalf("final %s lost %v note %q, want unknown, none", k.Final, k.LostMin, k.Note)
	}
}

// Keys are measured independently; the run's figure sums the keys that
// have a final read and names the others.
func TestDamagePerKey(t *testing.T) {
	b := staleHistory() // k0: 1 of 5 lost
	from := len(b.events)
	b.section(10, 1, 0)
	b.section(11, 2, 1)
	b.section(12, 3, 1) // lost update: read 1 again (no lock at all)
	b.rekey(from, "k1")
	from = len(b.events)
	b.section(13, 1, 0) // k2: never finally read
	b.rekey(from, "k2")
	from = len(b.events)
	b.finalRead(20, 6, 4)
	b.rekey(from, "k0")
	from = len(b.events)
	b.finalRead(21, 4, 2)
	b.rekey(from, "k1")
	d := b.damage(t)
	if len(d.Keys) != 3 || d.Keys[0].Key != "k0" || d.Keys[1].Key != "k1" || d.Keys[2].Key != "k2" {
		t.Fatalf("keys %+v", d.Keys)
	}
	wantLost(t, "k0", d.Keys[0].LostMin, d.Keys[0].LostMax, 1, 1)
	wantLost(t, "k1", d.Keys[1].LostMin, d.Keys[1].LostMax, 1, 1)
	if d.Keys[2].Final != FinalMissing || d.Keys[2].LostMin != nil {
		t.Fatalf("k2: final %s lost %v, want missing", d.Keys[2].Final, d.Keys[2].LostMin)
	}
	wantLost(t, "run", d.LostMin, d.LostMax, 2, 2)
	if d.Acknowledged != 9 || d.Measured != 2 || len(d.Unmeasured) != 1 || d.Unmeasured[0] != "k2" {
		t.Fatalf("acknowledged %d measured %d unmeasured %v", d.Acknowledged, d.Measured, d.Unmeasured)
	}
	if *d.LostShareMin != 0.25 { // 2 of the 8 acknowledged on k0 and k1
		t.Fatalf("share %v, want 0.25", *d.LostShareMin)
	}
	if got := d.LostText(); !strings.Contains(got, "lost 2 of 8 acknowledged updates (25%)") || !strings.Contains(got, "not counted: k2") {
		t.Fatalf("lost text %q", got)
	}
}

// A final value no write explains breaks the counter's assumptions: say so
// rather than count.
func TestDamageInconsistentFinalValue(t *testing.T) {
	b := newBuilder()
	b.section(0, 1, 0)
	b.acquire(1, 2)
	b.read(1, 2, 1)
	b.write(1, 2, 1, 2, history.Fail, "guard-failed") // reported failed
	b.release(1)
	b.finalRead(9, 3, 2) // ... yet the value is 2
	d := b.damage(t)
	if k := d.Keys[0]; k.LostMin != nil || !strings.Contains(k.Note, "step to 2") {
		t.Fatalf("lost %v note %q, want none and the step named", k.LostMin, k.Note)
	}

	b = newBuilder()
	b.acquire(0, 1)
	b.read(0, 1, 0)
	b.write(0, 1, 0, 5, history.OK, "") // not an increment
	b.release(0)
	b.finalRead(9, 2, 5)
	d = b.damage(t)
	if k := d.Keys[0]; k.LostMin != nil || !strings.Contains(k.Note, "plus one") {
		t.Fatalf("lost %v note %q, want none", k.LostMin, k.Note)
	}
}

func TestDamageTokenless(t *testing.T) {
	b := newBuilder()
	b.section(0, 0, 0)
	b.section(1, 0, 0) // no lock really held: a lost update
	b.finalRead(9, 0, 1)
	d := b.damage(t)
	wantLost(t, "run", d.LostMin, d.LostMax, 1, 1)
	if !d.Tokenless || !strings.Contains(d.Text(), "cannot be told") {
		t.Fatalf("tokenless %v text %q", d.Tokenless, d.Text())
	}
}
