package lossyfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
)

// failingDisk refuses its nth WriteAt (counting from 1), or its Sync.
type failingDisk struct {
	*os.File
	writes, failWrite int
	failSync          bool
}

func (d *failingDisk) WriteAt(p []byte, off int64) (int, error) {
	d.writes++
	if d.writes == d.failWrite {
		// Half of it lands, as a write interrupted by a full disk may.
		n, _ := d.File.WriteAt(p[:len(p)/2], off)
		return n, errors.New("no space left on the disk below")
	}
	return d.File.WriteAt(p, off)
}

func (d *failingDisk) Sync() error {
	if d.failSync {
		return errors.New("the disk below failed its sync")
	}
	return d.File.Sync()
}

// A sync that fails partway puts back what it had changed on the disk
// below: the disk still holds the last synced content, so a drop (a
// power cut after the failed sync) returns the file to it, and the cache
// still holds what the program wrote, for a sync that succeeds later.
func TestFailedSyncLeavesTheDiskAsLastSynced(t *testing.T) {
	synced := bytes.Repeat([]byte("s"), 2*PageSize+100)
	for _, c := range []struct {
		name string
		disk func(*os.File) *failingDisk
	}{
		{"second write refused", func(f *os.File) *failingDisk { return &failingDisk{File: f, failWrite: 2} }},
		{"third write refused", func(f *os.File) *failingDisk { return &failingDisk{File: f, failWrite: 3} }},
		{"sync refused", func(f *os.File) *failingDisk { return &failingDisk{File: f, failSync: true} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := c.disk(diskFile(t, synced))
			f := NewFile(int64(len(synced)))
			// An overwrite inside the synced content, then an append
			// over three pages, and a truncate between.
			f.WriteAt(d, []byte("overwritten"), 10)
			f.Truncate(PageSize + 50)
			f.WriteAt(d, bytes.Repeat([]byte("a"), 3*PageSize), PageSize+50)
			seen := read(t, f, d)
			if err := f.Sync(d); err == nil {
				t.Fatal("the sync did not fail")
			}
			if b := onDisk(t, d.File); !bytes.Equal(b, synced) {
				t.Fatalf("after the failed sync the disk below holds %d bytes differing from the %d last synced", len(b), len(synced))
			}
			if got := read(t, f, d); !bytes.Equal(got, seen) {
				t.Fatal("the failed sync changed what the program reads")
			}
			f.Drop()
			if got := read(t, f, d); !bytes.Equal(got, synced) {
				t.Fatalf("a drop after the failed sync reads %d bytes, not the last synced %d", len(got), len(synced))
			}
		})
	}
}

// The journal keeps the writes since the last sync, in order, and stops
// at a truncate (the sequence is then no longer writes alone).
func TestJournalKeepsWritesUntilATruncate(t *testing.T) {
	d := diskFile(t, nil)
	f := NewFile(0)
	f.KeepWrites()
	f.WriteAt(d, []byte("one"), 0)
	f.WriteAt(d, []byte("two"), 3)
	if f.Writes() != 2 {
		t.Fatalf("%d writes kept, want 2", f.Writes())
	}
	f.Sync(d)
	if f.Writes() != 0 {
		t.Fatalf("%d writes kept after a sync", f.Writes())
	}
	f.WriteAt(d, []byte("three"), 6)
	f.Truncate(2)
	f.WriteAt(d, []byte("four"), 2)
	if f.Writes() != 0 {
		t.Fatalf("%d writes kept after a truncate, want none", f.Writes())
	}
	f.Sync(d)
	f.WriteAt(d, []byte("five"), 6)
	if f.Writes() != 1 {
		t.Fatalf("%d writes kept after the next sync, want 1", f.Writes())
	}
}

// DropKeeping writes the pieces chosen to the disk below, and drops the
// rest: a later write may survive where an earlier did not (torn-seq),
// and the file's size covers what survived.
func TestDropKeepingKeepsTheChosenWrites(t *testing.T) {
	d := diskFile(t, []byte("synced."))
	f := NewFile(7)
	f.KeepWrites()
	f.WriteAt(d, []byte("first."), 7)
	f.WriteAt(d, []byte("second."), 13)
	f.WriteAt(d, []byte("third."), 20)
	_, kept, changed, err := f.DropKeeping(d, func(ws []Write) []Write {
		if len(ws) != 3 {
			t.Fatalf("%d writes offered, want 3", len(ws))
		}
		return []Write{ws[0], ws[2]}
	})
	if err != nil || !changed || kept != 12 {
		t.Fatalf("kept %d bytes, changed %v, err %v", kept, changed, err)
	}
	want := "synced.first.\x00\x00\x00\x00\x00\x00\x00third."
	if got := read(t, f, d); string(got) != want {
		t.Fatalf("after the drop the file reads %q, want %q", got, want)
	}
	if b := onDisk(t, d); string(b) != want {
		t.Fatalf("the disk below holds %q", b)
	}
}

// torn-op keeps the part of one write before a page boundary inside it;
// a write within one page is kept whole or not at all. The same seed
// draws the same cut.
func TestTearCutsAtAPageBoundary(t *testing.T) {
	w := Write{Off: PageSize - 100, Data: bytes.Repeat([]byte("x"), 2*PageSize+200)}
	seen := map[int]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		got := tear(w, rand.New(rand.NewPCG(seed, 1)))
		if len(got) != 1 || got[0].Off != w.Off || got[0].End()%PageSize != 0 || got[0].End() >= w.End() {
			t.Fatalf("seed %d: tore %v", seed, got)
		}
		seen[len(got[0].Data)] = true
		again := tear(w, rand.New(rand.NewPCG(seed, 1)))
		if len(again[0].Data) != len(got[0].Data) {
			t.Fatalf("seed %d tore at %d, then at %d", seed, len(got[0].Data), len(again[0].Data))
		}
	}
	if !seen[100] || !seen[100+PageSize] {
		t.Errorf("the cuts drawn were %v, want both page boundaries inside the write", seen)
	}
	small := Write{Off: 10, Data: []byte("small")}
	whole, none := 0, 0
	for seed := uint64(0); seed < 50; seed++ {
		switch got := tear(small, rand.New(rand.NewPCG(seed, 1))); {
		case len(got) == 0:
			none++
		case len(got) == 1 && bytes.Equal(got[0].Data, small.Data):
			whole++
		default:
			t.Fatalf("a write within a page tore into %v", got)
		}
	}
	if whole == 0 || none == 0 {
		t.Errorf("a write within a page: kept whole %d times, lost %d, want both", whole, none)
	}
}

func TestParseTornAndTrigger(t *testing.T) {
	for _, s := range []string{"", "none", "torn-op", "torn-seq"} {
		if _, err := ParseTorn(s); err != nil {
			t.Errorf("ParseTorn(%q): %v", s, err)
		}
	}
	if _, err := ParseTorn("torn"); err == nil {
		t.Error("ParseTorn accepted torn")
	}
	tr, err := ParseTrigger(map[string]string{"sync": "*.wal", "n": "3", "timing": "after"})
	if err != nil || tr.N != 3 || !tr.After || !tr.Matches("member/wal/0000-0001.wal") || tr.Matches("member/snap/db") {
		t.Errorf("sync trigger %+v, %v", tr, err)
	}
	if tr.String() != "sync=*.wal n=3 timing=after" {
		t.Errorf("String() = %q", tr.String())
	}
	if tr, err := ParseTrigger(map[string]string{"sync": "appendonlydir/*"}); err != nil || tr.N != 1 || tr.After || !tr.Matches("appendonlydir/appendonly.aof.1.incr.aof") {
		t.Errorf("default trigger %+v, %v", tr, err)
	}
	for _, bad := range []map[string]string{{}, {"sync": "["}, {"sync": "x", "n": "0"}, {"sync": "x", "timing": "during"}, {"at": "soon"}} {
		if _, err := ParseTrigger(bad); err == nil {
			t.Errorf("ParseTrigger(%v) accepted", bad)
		}
	}
}
