package lossyfs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
)

// PageSize is the unit the cache keeps a file's unsynced content in.
const PageSize = 4096

// Disk is the file below the layer, as the cache uses it: the content a
// sync writes to and a read of what is not cached comes from.
type Disk interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Sync() error
}

// File is one file's unsynced state: the pages written since its last
// sync and its size as the programs above see it, over its content on
// the disk below as of that sync. It is pure bookkeeping over a Disk, so
// it can be tested without a mount.
//
// Invariant: the disk below holds exactly the content and size the file
// had at its last sync (or when the layer first saw it); only Sync
// writes to it.
type File struct {
	mu sync.Mutex
	// synced is the file's size on disk: at its last sync.
	synced int64
	// size is its size as seen above the layer.
	size int64
	// zeroFrom: disk bytes at or beyond it read as zeros (the file was
	// truncated below them since the last sync); MaxInt64 when not.
	zeroFrom int64
	// pages are the pages written since the last sync, each whole, as
	// seen above the layer.
	pages map[int64][]byte
	// journal: the file keeps its writes since the last sync (writes),
	// for a cut that lets some of them survive (a torn write, a torn
	// sequence). Off by default: it costs a copy of every write.
	journal bool
	// writes are the writes since the last sync, in order, while the
	// journal is kept and no truncate or fallocate came between (then
	// the sequence is no longer writes alone, and tearing stops: untorn).
	writes []Write
	untorn bool
}

// Write is one write since a file's last sync, as the program made it.
type Write struct {
	Off  int64
	Data []byte
}

// End is the offset just past the write.
func (w Write) End() int64 { return w.Off + int64(len(w.Data)) }

// NewFile is the state of a file whose disk content has size bytes and
// nothing unsynced.
func NewFile(size int64) *File {
	return &File{synced: size, size: size, zeroFrom: math.MaxInt64}
}

// KeepWrites has the file keep its writes since its last sync from now
// on, for DropKeeping.
func (f *File) KeepWrites() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.journal = true
}

// Dirty reports whether the file has anything unsynced.
func (f *File) Dirty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dirty()
}

func (f *File) dirty() bool {
	return len(f.pages) > 0 || f.size != f.synced || f.zeroFrom < f.synced
}

// Size is the file's size as seen above the layer.
func (f *File) Size() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.size
}

// Writes is how many unsynced writes the file keeps for a torn cut.
func (f *File) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.journal || f.untorn {
		return 0
	}
	return len(f.writes)
}

// Unsynced is how many bytes of cached pages the file holds.
func (f *File) Unsynced() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(len(f.pages)) * PageSize
}

// base reads [off, off+len(p)) of the disk as of the last sync, with
// what a truncation since has cut off read as zeros.
func (f *File) base(d Disk, p []byte, off int64) error {
	clear(p)
	limit := min(f.synced, f.zeroFrom)
	if off >= limit {
		return nil
	}
	n := int64(len(p))
	if off+n > limit {
		n = limit - off
	}
	_, err := d.ReadAt(p[:n], off)
	if err == io.EOF {
		err = nil
	}
	return err
}

// ReadAt reads from the file as seen above the layer: cached pages over
// the disk. It returns the number of bytes read, short at the end of the
// file.
func (f *File) ReadAt(d Disk, p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= f.size {
		return 0, nil
	}
	if off+int64(len(p)) > f.size {
		p = p[:f.size-off]
	}
	if err := f.base(d, p, off); err != nil {
		return 0, err
	}
	end := off + int64(len(p))
	for idx := off / PageSize; idx*PageSize < end; idx++ {
		pg, ok := f.pages[idx]
		if !ok {
			continue
		}
		start := idx * PageSize
		from, to := max(start, off), min(start+PageSize, end)
		copy(p[from-off:to-off], pg[from-start:to-start])
	}
	return len(p), nil
}

// page is page idx as seen above the layer, cached from now on.
func (f *File) page(d Disk, idx int64) ([]byte, error) {
	if pg, ok := f.pages[idx]; ok {
		return pg, nil
	}
	pg := make([]byte, PageSize)
	if err := f.base(d, pg, idx*PageSize); err != nil {
		return nil, err
	}
	// Bytes beyond the size read as zeros, whatever the disk holds.
	if end := f.size - idx*PageSize; end < PageSize {
		clear(pg[max(end, 0):])
	}
	if f.pages == nil {
		f.pages = map[int64][]byte{}
	}
	f.pages[idx] = pg
	return pg, nil
}

// WriteAt writes p at off into the cache; the disk is not touched.
func (f *File) WriteAt(d Disk, p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	end := off + int64(len(p))
	for idx := off / PageSize; idx*PageSize < end; idx++ {
		pg, err := f.page(d, idx)
		if err != nil {
			return 0, err
		}
		start := idx * PageSize
		from, to := max(start, off), min(start+PageSize, end)
		copy(pg[from-start:to-start], p[from-off:to-off])
	}
	f.size = max(f.size, end)
	if f.journal && !f.untorn {
		f.writes = append(f.writes, Write{Off: off, Data: append([]byte(nil), p...)})
	}
	return len(p), nil
}

// Truncate sets the file's size in the cache: bytes cut off are gone and
// read as zeros if the file grows again; the disk is not touched.
func (f *File) Truncate(size int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Whatever lies beyond the smaller of the two sizes reads as zeros
	// from now on, whatever the disk holds there.
	if size != f.size {
		f.zeroFrom = min(f.zeroFrom, f.size, size)
		f.untorn, f.writes = true, nil
	}
	for idx, pg := range f.pages {
		start := idx * PageSize
		switch {
		case start >= size:
			delete(f.pages, idx)
		case start+PageSize > size:
			clear(pg[size-start:])
		}
	}
	f.size = size
}

// Extend grows the file to size if it is smaller (fallocate without
// KEEP_SIZE): the new bytes read as zeros.
func (f *File) Extend(size int64) {
	f.mu.Lock()
	grow := size > f.size
	f.mu.Unlock()
	if grow {
		f.Truncate(size)
	}
}

// Sync writes the cached pages and size to the disk and syncs it: the
// file's content as seen above is then what a drop returns it to.
//
// A sync that fails partway (a write, a truncate or the sync of the disk
// below refused) puts back what it had changed on the disk below — the
// content it overwrote, read before each write, and the size — so the
// disk below still holds the last synced content and a later drop
// returns the file to it; the cache keeps the unsynced pages, and the
// error is the program's. Only a put-back that fails too leaves the disk
// below changed, and its error says so.
func (f *File) Sync(d Disk) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var u undo
	if err := f.sync(d, &u); err != nil {
		if uerr := u.restore(d, f.synced); uerr != nil {
			return errors.Join(err, fmt.Errorf("putting back what the failed sync had changed on the disk below: %w (the disk below now holds part of an unsynced state)", uerr))
		}
		return err
	}
	f.synced, f.zeroFrom, f.pages = f.size, math.MaxInt64, nil
	f.writes, f.untorn = nil, false
	return nil
}

// undo is what a sync changed on the disk below so far: the old content
// of each region it overwrote or cut off, to put back if it fails.
type undo struct{ saved []Write }

// save reads [off, off+n) of the disk before a sync changes it.
func (u *undo) save(d Disk, off, n int64) error {
	if n <= 0 {
		return nil
	}
	b := make([]byte, n)
	m, err := d.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return err
	}
	u.saved = append(u.saved, Write{Off: off, Data: b[:m]})
	return nil
}

// restore puts the disk back to size bytes with the saved content.
func (u *undo) restore(d Disk, size int64) error {
	if err := d.Truncate(size); err != nil {
		return err
	}
	for i := len(u.saved) - 1; i >= 0; i-- {
		if _, err := d.WriteAt(u.saved[i].Data, u.saved[i].Off); err != nil {
			return err
		}
	}
	return nil
}

func (f *File) sync(d Disk, u *undo) error {
	// end is the disk's size as this sync leaves it so far.
	end := f.synced
	// limit: the disk holds synced content below it.
	limit := min(f.synced, f.zeroFrom)
	if f.zeroFrom < f.synced {
		if err := u.save(d, f.zeroFrom, f.synced-f.zeroFrom); err != nil {
			return err
		}
		if err := d.Truncate(f.zeroFrom); err != nil {
			return err
		}
		end = f.zeroFrom
	}
	idxs := make([]int64, 0, len(f.pages))
	for idx := range f.pages {
		idxs = append(idxs, idx)
	}
	sort.Slice(idxs, func(i, j int) bool { return idxs[i] < idxs[j] })
	for _, idx := range idxs {
		start := idx * PageSize
		if start >= f.size {
			continue
		}
		pg := f.pages[idx][:min(PageSize, f.size-start)]
		if start < limit {
			if err := u.save(d, start, min(int64(len(pg)), limit-start)); err != nil {
				return err
			}
		}
		if _, err := d.WriteAt(pg, start); err != nil {
			return err
		}
		end = max(end, start+int64(len(pg)))
	}
	// The size, where the writes did not already leave it: a truncate of
	// a file to its own size would still change its times, and make the
	// sync below a metadata commit the program never asked for (an
	// append, the commonest write of a log, sets its size by itself).
	if end != f.size {
		if err := d.Truncate(f.size); err != nil {
			return err
		}
	}
	return d.Sync()
}

// Drop forgets everything unsynced: the file is again what the disk
// holds. It returns how many bytes of cached pages it forgot and whether
// anything changed.
func (f *File) Drop() (bytes int64, changed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed = f.dirty()
	bytes = int64(len(f.pages)) * PageSize
	f.forget()
	return bytes, changed
}

// forget is Drop under f.mu.
func (f *File) forget() {
	f.size, f.zeroFrom, f.pages = f.synced, math.MaxInt64, nil
	f.writes, f.untorn = nil, false
}

// DropKeeping is Drop, except that first the pieces keep picks from the
// file's unsynced writes (nil when it keeps none: no journal, or a
// truncate or fallocate came between) reach the disk below, as writes in
// flight or written back before a power cut do: the disk below holds
// them afterwards, and the file's synced size grows to cover them. It
// returns what Drop does, and how many bytes of the pieces survived.
func (f *File) DropKeeping(d Disk, keep func(writes []Write) []Write) (bytes, kept int64, changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed = f.dirty()
	bytes = int64(len(f.pages)) * PageSize
	var ws []Write
	if f.journal && !f.untorn {
		ws = f.writes
	}
	for _, w := range keep(ws) {
		if _, err = d.WriteAt(w.Data, w.Off); err != nil {
			break
		}
		kept += int64(len(w.Data))
		f.synced = max(f.synced, w.End())
	}
	f.forget()
	return bytes, kept, changed, err
}
