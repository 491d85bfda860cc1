package models

import (
	"testing"

	"github.com/fencecheck/fencecheck/history"
)

// A lock-free read (--read-mix) is a read by a process that holds no lock:
// the invoke carries no token, and nothing acquired it.
func (b *builder) readLockFree(p int, v int64) {
	b.invoke(p, history.Read, 0, nil, nil)
	b.complete(p, history.OK, 0, history.Int64(v), "")
}

// mixedHistory: processes 1 and 2 take turns in locked sections while
// process 3 only reads without the lock, the last time after every write;
// then the final read (process 9, a fresh lock, token 4) reads 3.
func mixedHistory() *builder {
	b := newBuilder()
	b.readLockFree(3, 0)
	b.section(1, 1, 0)
	b.readLockFree(3, 1)
	b.section(2, 2, 1)
	b.section(1, 3, 2)
	b.readLockFree(3, 3)
	b.finalRead(9, 4, 3)
	return b
}

func TestLockFreeReadsAreMarked(t *testing.T) {
	ops, _ := history.Pair(mixedHistory().events)
	free := 0
	for _, o := range ops {
		if o.F != history.Read {
			continue
		}
		if o.LockFree != (o.Process == 3) {
			t.Fatalf("process %d's read at index %d: lock-free %v, want %v", o.Process, o.InvokeIndex, o.LockFree, o.Process == 3)
		}
		if o.LockFree {
			free++
		}
	}
	if free != 3 {
		t.Fatalf("%d lock-free reads, want 3", free)
	}
	// The streaming pairer marks them alike.
	p := history.NewPairer()
	for _, e := range mixedHistory().events {
		if o, done := p.Add(e); done && o.F == history.Read && o.LockFree != (o.Process == 3) {
			t.Fatalf("pairer: process %d's read: lock-free %v", o.Process, o.LockFree)
		}
	}
}

// A read after a release, by the process that released, is lock-free too:
// the hold ends at the release's invocation.
func TestReadAfterReleaseIsLockFree(t *testing.T) {
	b := newBuilder()
	b.section(1, 1, 0)
	b.readLockFree(1, 1)
	ops, _ := history.Pair(b.events)
	last := ops[len(ops)-1]
	if last.F != history.Read || !last.LockFree {
		t.Fatalf("the read after the release: %+v, want a lock-free read", last)
	}
	if ops[1].LockFree {
		t.Fatal("the section's own read was marked lock-free")
	}
}

func TestLockFreeReadsKeepAValidHistoryValid(t *testing.T) {
	wantVerdict(t, mixedHistory().check(t), Valid)
	if got := DescribeOp(&history.Op{F: history.Read, Type: history.OK, Value: history.Int64(3), LockFree: true}); got != "read(lock-free) → 3" {
		t.Fatalf("described as %q", got)
	}
}

// A lock-free read is still a read of the storage: one that saw a value
// the storage never held then is a violation like any other.
func TestLockFreeReadOfAValueNeverWrittenIsInvalid(t *testing.T) {
	b := newBuilder()
	b.section(1, 1, 0)
	b.readLockFree(3, 7)
	b.finalRead(9, 2, 1)
	wantVerdict(t, b.check(t), Invalid)
}

// A lock-free read after a higher token was admitted carries no token, so
// it is neither stale nor refused: with the fence at 2 it still reads.
func TestLockFreeReadBelowTheFenceIsNotStale(t *testing.T) {
	b := newBuilder()
	b.section(1, 2, 0)
	b.readLockFree(3, 1)
	b.finalRead(9, 3, 1)
	wantVerdict(t, b.check(t), Valid)
	d := b.damage(t)
	if d.StaleWritesAccepted != 0 || d.StaleRefused != 0 {
		t.Fatalf("damage %s: a lock-free read counted as stale", d.Text())
	}
}

// The damage count's final read: a process that only reads without the
// lock never writes and touches one key, and its last read came after
// every write. It must not be taken for the final reader, whose process
// id is lower here (a retired workload process can outnumber it): the
// final read, and the lost update, are the locked read's.
func TestLockFreeReaderIsNotTheFinalReader(t *testing.T) {
	b := newBuilder()
	b.section(1, 1, 0)
	// Process 2 is a stale holder (a trusting client on an expired
	// grant): it reads 0 under token 2, process 3 overtakes it, and its
	// write of 1 wipes out process 3's 2.
	b.acquire(2, 2)
	b.read(2, 2, 0)
	b.section(3, 3, 1)
	b.write(2, 2, 0, 1, history.OK, "")
	b.release(2)
	b.finalRead(9, 4, 1)
	// A workload process with a higher id than the final reader's reads
	// without the lock after every write, and its read's outcome is
	// unknown: taken for the final read, it would leave the loss untold.
	b.invoke(12, history.Read, 0, nil, nil)
	b.complete(12, history.Info, 0, nil, "timeout")
	d := b.damage(t)
	if d.Keys[0].Final != FinalOK || d.Keys[0].FinalValue == nil || *d.Keys[0].FinalValue != 1 {
		t.Fatalf("final read %s %v, want ok 1 (process 9's)", d.Keys[0].Final, d.Keys[0].FinalValue)
	}
	wantLost(t, "lost updates", d.LostMin, d.LostMax, 2, 2)

	// Without a final read, the lock-free reader does not stand in for it.
	b = newBuilder()
	b.section(1, 1, 0)
	b.section(2, 2, 1)
	b.readLockFree(12, 2)
	d = b.damage(t)
	if d.Keys[0].Final != FinalMissing || d.LostMin != nil {
		t.Fatalf("final read %s, lost %v: a lock-free read was taken for the final read", d.Keys[0].Final, d.LostMin)
	}
}

// The exposures count ignores a read outside any lease term: a lock-free
// read by an old holder is no late op.
func TestLockFreeReadIsNoExposure(t *testing.T) {
	b := newBuilder()
	b.acquire(1, 1)
	b.read(1, 1, 0)
	b.write(1, 1, 0, 1, history.OK, "")
	b.release(1)
	b.section(2, 2, 1)
	b.readLockFree(1, 2)
	b.finalRead(9, 3, 2)
	wantCounts(t, b.exposures(t).ExposureCounts, ExposureCounts{})
}
