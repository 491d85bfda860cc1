package lossyfs

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// The cache over a real file in a temporary directory: no mount. What a
// mount adds (the kernel's calls, renames, directories) is tested in a
// container (docker_test.go).

func diskFile(t *testing.T, content []byte) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func read(t *testing.T, f *File, d Disk) []byte {
	t.Helper()
	buf := make([]byte, f.Size()+100)
	n, err := f.ReadAt(d, buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func onDisk(t *testing.T, d *os.File) []byte {
	t.Helper()
	b, err := os.ReadFile(d.Name())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWrittenNotSyncedDroppedIsGone(t *testing.T) {
	d := diskFile(t, nil)
	f := NewFile(0)
	f.WriteAt(d, []byte("token 7"), 0)
	if got := read(t, f, d); string(got) != "token 7" {
		t.Fatalf("before the drop the file reads %q", got)
	}
	if b := onDisk(t, d); len(b) != 0 {
		t.Fatalf("an unsynced write reached the disk: %q", b)
	}
	if bytes, changed := f.Drop(); !changed || bytes != PageSize {
		t.Fatalf("drop says changed=%v bytes=%d", changed, bytes)
	}
	if got := read(t, f, d); len(got) != 0 || f.Size() != 0 {
		t.Fatalf("after the drop the file reads %q (size %d), want nothing", got, f.Size())
	}
}

func TestSyncedThenDroppedIsKept(t *testing.T) {
	d := diskFile(t, nil)
	f := NewFile(0)
	f.WriteAt(d, []byte("token 7"), 0)
	if err := f.Sync(d); err != nil {
		t.Fatal(err)
	}
	if b := onDisk(t, d); string(b) != "token 7" {
		t.Fatalf("after the sync the disk holds %q", b)
	}
	if _, changed := f.Drop(); changed {
		t.Fatal("a drop after a sync changed the file")
	}
	if got := read(t, f, d); string(got) != "token 7" {
		t.Fatalf("after the drop the file reads %q", got)
	}
}

func TestAppendedAfterSyncDropsBackToSyncedLength(t *testing.T) {
	d := diskFile(t, []byte("0123456789"))
	f := NewFile(10)
	f.WriteAt(d, []byte("abc"), 10)
	f.WriteAt(d, bytes.Repeat([]byte("z"), 3*PageSize), 13)
	f.WriteAt(d, []byte("X"), 2) // and an overwrite inside the synced part
	if f.Size() != 13+3*PageSize {
		t.Fatalf("size %d before the drop", f.Size())
	}
	f.Drop()
	if got := read(t, f, d); string(got) != "0123456789" {
		t.Fatalf("after the drop the file reads %q, want its synced content", got)
	}
}

func TestTruncateNotSyncedIsUndone(t *testing.T) {
	d := diskFile(t, []byte("0123456789"))
	f := NewFile(10)
	f.Truncate(3)
	f.Truncate(8) // grown again: the cut bytes read as zeros, not as the disk's
	if got := read(t, f, d); string(got) != "012\x00\x00\x00\x00\x00" {
		t.Fatalf("truncated and grown, the file reads %q", got)
	}
	f.Drop()
	if got := read(t, f, d); string(got) != "0123456789" {
		t.Fatalf("after the drop the file reads %q", got)
	}
	f.Truncate(3)
	f.Truncate(8)
	if err := f.Sync(d); err != nil {
		t.Fatal(err)
	}
	if b := onDisk(t, d); string(b) != "012\x00\x00\x00\x00\x00" {
		t.Fatalf("after the sync the disk holds %q", b)
	}
}

// TestAgainstModel runs random writes, truncations, syncs and drops on
// the cache and on two byte slices (what programs see, what survives a
// power cut) and compares them after every step.
func TestAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		initial := make([]byte, rng.IntN(3*PageSize))
		for i := range initial {
			initial[i] = byte('a' + rng.IntN(26))
		}
		d := diskFile(t, initial)
		f := NewFile(int64(len(initial)))
		seen, durable := bytes.Clone(initial), bytes.Clone(initial)
		for step := 0; step < 200; step++ {
			var op string
			switch r := rng.IntN(20); {
			case r < 12:
				off := rng.IntN(4 * PageSize)
				p := make([]byte, 1+rng.IntN(2*PageSize))
				for i := range p {
					p[i] = byte('A' + rng.IntN(26))
				}
				f.WriteAt(d, p, int64(off))
				if off+len(p) > len(seen) {
					seen = append(seen, make([]byte, off+len(p)-len(seen))...)
				}
				copy(seen[off:], p)
				op = "write"
			case r < 16:
				size := rng.IntN(4 * PageSize)
				f.Truncate(int64(size))
				if size < len(seen) {
					seen = seen[:size]
				} else {
					seen = append(seen, make([]byte, size-len(seen))...)
				}
				op = "truncate"
			case r < 18:
				if err := f.Sync(d); err != nil {
					t.Fatal(err)
				}
				durable = bytes.Clone(seen)
				op = "sync"
			default:
				f.Drop()
				seen = bytes.Clone(durable)
				op = "drop"
			}
			if got := read(t, f, d); !bytes.Equal(got, seen) {
				t.Fatalf("seed %d step %d (%s): the file reads %d bytes differing from the model's %d", seed, step, op, len(got), len(seen))
			}
			if b := onDisk(t, d); !bytes.Equal(b, durable) {
				t.Fatalf("seed %d step %d (%s): the disk holds %d bytes, not the last synced %d", seed, step, op, len(b), len(durable))
			}
		}
	}
}

// countingDisk counts the truncates a sync makes of the disk below.
type countingDisk struct {
	*os.File
	truncates int
}

func (d *countingDisk) Truncate(size int64) error {
	d.truncates++
	return d.File.Truncate(size)
}

// A sync sets the disk's size only where its writes did not already
// leave it there: writes inside the synced size (a preallocated log
// overwritten in place) and an append (a log growing) need no truncate,
// which would still change the file's times and turn the sync into a
// metadata commit. A cut, and a growth with nothing written at the end,
// do.
func TestSyncTruncatesOnlyWhenTheWritesLeaveTheSizeWrong(t *testing.T) {
	d := &countingDisk{File: diskFile(t, make([]byte, 3*PageSize))}
	f := NewFile(3 * PageSize)
	f.WriteAt(d, []byte("entry"), PageSize+10)
	if err := f.Sync(d); err != nil {
		t.Fatal(err)
	}
	if d.truncates != 0 {
		t.Errorf("a sync within the synced size truncated the disk %d times", d.truncates)
	}
	if b := onDisk(t, d.File); len(b) != 3*PageSize || string(b[PageSize+10:PageSize+15]) != "entry" {
		t.Fatalf("the disk holds %d bytes, %q at the write", len(b), b[PageSize+10:PageSize+15])
	}
	f.WriteAt(d, []byte("appended"), 3*PageSize)
	if err := f.Sync(d); err != nil {
		t.Fatal(err)
	}
	if d.truncates != 0 {
		t.Errorf("a sync of an append truncated the disk %d times", d.truncates)
	}
	if b := onDisk(t, d.File); len(b) != 3*PageSize+8 {
		t.Fatalf("after a synced append the disk holds %d bytes, want %d", len(b), 3*PageSize+8)
	}
	f.Truncate(PageSize)
	if err := f.Sync(d); err != nil {
		t.Fatal(err)
	}
	if b := onDisk(t, d.File); len(b) != PageSize {
		t.Fatalf("after a synced truncate the disk holds %d bytes, want %d", len(b), PageSize)
	}
	cut := d.truncates
	if cut == 0 {
		t.Error("a sync that cut the file never set its size on the disk")
	}
	f.Truncate(2 * PageSize)
	f.WriteAt(d, []byte("x"), 10)
	if err := f.Sync(d); err != nil {
		t.Fatal(err)
	}
	if b := onDisk(t, d.File); len(b) != 2*PageSize || b[10] != 'x' || b[PageSize+1] != 0 {
		t.Fatalf("after a synced growth the disk holds %d bytes", len(b))
	}
	if d.truncates == cut {
		t.Error("a sync that grew the file past its writes never set its size on the disk")
	}
}
