package lossyfs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Layer is the cache of every file written through one mount, by inode
// number on the disk below (a file keeps its cache through renames, and
// through the kernel forgetting and finding its inode again).
type Layer struct {
	mount, disk string
	opts        Options

	mu    sync.Mutex
	files map[uint64]*entry

	power power
	// names journals directory changes under Options.LoseNames; nil
	// otherwise.
	names *names
}

// entry is one file's cache, and who uses it.
//
// An inode number names a file only while the file exists: once its last
// name is gone and its last descriptor closed, the disk below may give
// the number to a new file. So an entry counts the open handles on it;
// when the last name goes (forget) it is marked gone, and leaves the map
// when its last handle is released, before the descriptor below is
// closed, so no new file can meet it.
type entry struct {
	ino  uint64
	file *File
	// inode is the last FUSE inode the file was opened or written
	// through: a drop tells the kernel to forget what it cached of it.
	inode *fs.Inode
	path  string // for Status and a torn cut, as last seen
	// handles are the open handles on the file; gone: its last name was
	// removed.
	handles int
	gone    bool
}

func newLayer(mount, disk string, opts Options) *Layer {
	return &Layer{mount: mount, disk: disk, opts: opts, files: map[uint64]*entry{}}
}

// file is the cache of inode ino, nil when the layer has none.
func (l *Layer) file(ino uint64) *File {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.files[ino]; e != nil {
		return e.file
	}
	return nil
}

// entryOf is the entry of the file whose stat is st, made on first use,
// noting in as its inode and path as its name, as last seen.
func (l *Layer) entryOf(st *unix.Stat_t, in *fs.Inode, path string) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.files[st.Ino]
	if e == nil {
		e = &entry{ino: st.Ino, file: NewFile(st.Size)}
		if l.opts.KeepWrites {
			e.file.KeepWrites()
		}
		l.files[st.Ino] = e
	}
	if in != nil {
		e.inode = in
	}
	e.path = path
	return e
}

// fileFor is the cache of the file fd is open on, made (with the disk's
// size) on first use.
func (l *Layer) fileFor(fd int, in *fs.Inode, path string) (*File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	return l.entryOf(&st, in, path).file, nil
}

// attach is entryOf for a handle opened on the file: counted until
// detach.
func (l *Layer) attach(st *unix.Stat_t, in *fs.Inode, path string) *entry {
	e := l.entryOf(st, in, path)
	l.mu.Lock()
	e.handles++
	l.mu.Unlock()
	return e
}

// detach is a handle on e released: a file whose last name is gone
// leaves the map with its last handle.
func (l *Layer) detach(e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.handles--
	if e.handles <= 0 && e.gone && l.files[e.ino] == e {
		delete(l.files, e.ino)
	}
}

// forget stops following inode ino: its last name is gone, and once its
// last descriptor is closed the disk below may hand its number to a new
// file. Handles still open on it keep its cache until they are released.
func (l *Layer) forget(ino uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.files[ino]
	if e == nil {
		return
	}
	e.gone = true
	if e.handles <= 0 {
		delete(l.files, ino)
	}
}

// Drop forgets everything unsynced in every file, and tells the kernel
// to forget what it cached of each file that changed.
func (l *Layer) Drop() Dropped {
	d, _ := l.DropTorn(TornNone, 0)
	return d
}

// DropTorn is Drop, with what torn keeps of the unsynced writes (drawn
// from seed: the same files with the same writes keep the same pieces)
// written to the disk below first. A file whose pieces cannot be written
// below is dropped whole, and the error says which.
func (l *Layer) DropTorn(torn Torn, seed uint64) (Dropped, error) {
	l.mu.Lock()
	es := make([]*entry, 0, len(l.files))
	for _, e := range l.files {
		es = append(es, e)
	}
	l.mu.Unlock()
	// In inode order, so a seed draws the same pieces of the same files.
	sort.Slice(es, func(i, j int) bool { return es[i].ino < es[j].ino })
	rng := rand.New(rand.NewPCG(seed, 0x70e4))
	var opFile *entry
	opWrite := 0
	if torn == TornOp {
		total := 0
		for _, e := range es {
			total += e.file.Writes()
		}
		if total > 0 {
			k := rng.IntN(total)
			for _, e := range es {
				if n := e.file.Writes(); k < n {
					opFile, opWrite = e, k
					break
				} else {
					k -= n
				}
			}
		}
	}
	var d Dropped
	var errs []error
	for _, e := range es {
		var keep func([]Write) []Write
		switch {
		case torn == TornSeq && e.file.Writes() > 0:
			keep = keepSeq(rng)
		case e == opFile:
			keep = func(ws []Write) []Write {
				if opWrite < len(ws) {
					return tear(ws[opWrite], rng)
				}
				return nil
			}
		}
		var b, kept int64
		var changed bool
		if keep == nil {
			b, changed = e.file.Drop()
		} else {
			fd, err := l.openBelow(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: no torn write kept: %w", e.path, err))
				b, changed = e.file.Drop()
			} else {
				b, kept, changed, err = e.file.DropKeeping(disk(fd), keep)
				unix.Close(fd)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: writing what a torn cut keeps: %w", e.path, err))
				}
			}
		}
		if !changed {
			continue
		}
		d.Files++
		d.Bytes += b
		d.Kept += kept
		if e.inode != nil {
			// Data and attributes: the size the kernel holds is the
			// cache's, not the disk's.
			e.inode.NotifyContent(0, 0)
		}
	}
	return d, errors.Join(errs...)
}

// openBelow opens e's file on the disk below: at its path as last seen,
// or, renamed since, wherever the disk below has its inode now.
func (l *Layer) openBelow(e *entry) (int, error) {
	open := func(p string) (int, error) {
		fd, err := unix.Open(p, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Ino != e.ino {
			unix.Close(fd)
			return -1, fmt.Errorf("inode %d is no longer at %s", e.ino, p)
		}
		return fd, nil
	}
	if fd, err := open(filepath.Join(l.disk, e.path)); err == nil {
		return fd, nil
	}
	found := ""
	filepath.WalkDir(l.disk, func(p string, de os.DirEntry, err error) error {
		if err != nil || found != "" || !de.Type().IsRegular() {
			return nil
		}
		if info, err := de.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Ino == e.ino {
				found = p
				return filepath.SkipAll
			}
		}
		return nil
	})
	if found == "" {
		return -1, fmt.Errorf("inode %d is nowhere on the disk below", e.ino)
	}
	return open(found)
}

// Unsynced lists the files with something unsynced, by path under the
// mount, with the bytes of pages each holds.
func (l *Layer) Unsynced() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.files {
		if e.file.Dirty() {
			out = append(out, fmt.Sprintf("%s (size %d, %d bytes of pages unsynced)", e.path, e.file.Size(), e.file.Unsynced()))
		}
	}
	sort.Strings(out)
	return out
}

// node is a loopback node whose file data goes through the layer.
type node struct {
	fs.LoopbackNode
	layer *Layer
}

func (l *Layer) newNode(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
	return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, layer: l}
}

func (n *node) rel() string { return n.Path(n.Root()) }

func (n *node) diskPath() string { return filepath.Join(n.RootData.Path, n.rel()) }

// sized puts the cache's size for inode ino into out.
func (l *Layer) sized(out *fuse.Attr) {
	if out.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return
	}
	if f := l.file(out.Ino); f != nil {
		out.Size = uint64(f.Size())
		out.Blocks = (out.Size + 511) / 512
	}
}

var (
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.FileReader         = (*handle)(nil)
	_ fs.FileWriter         = (*handle)(nil)
	_ fs.FileFsyncer        = (*handle)(nil)
	_ fs.FileFlusher        = (*handle)(nil)
	_ fs.FileReleaser       = (*handle)(nil)
	_ fs.FileAllocater      = (*handle)(nil)
	_ fs.FileLseeker        = (*handle)(nil)
	_ fs.FileGetattrer      = (*handle)(nil)
)

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno == 0 {
		n.layer.sized(&out.Attr)
	}
	return ch, errno
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if h, ok := f.(*handle); ok {
		return h.Getattr(ctx, out)
	}
	if errno := n.LoopbackNode.Getattr(ctx, nil, out); errno != 0 {
		return errno
	}
	n.layer.sized(&out.Attr)
	return 0
}

// Setattr keeps a size change in the cache and passes the rest (mode,
// owner, times: metadata, which goes to disk at once) through.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := n.layer.gate(); errno != 0 {
		return errno
	}
	if size, ok := in.GetSize(); ok {
		fd, closeFd := -1, false
		if h, ok := f.(*handle); ok {
			fd = h.fd
		} else {
			var err error
			if fd, err = unix.Open(n.diskPath(), unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
				return fs.ToErrno(err)
			}
			closeFd = true
		}
		file, err := n.layer.fileFor(fd, n.EmbeddedInode(), n.rel())
		if closeFd {
			unix.Close(fd)
		}
		if err != nil {
			return fs.ToErrno(err)
		}
		file.Truncate(int64(size))
		in.Valid &^= fuse.FATTR_SIZE
	}
	if errno := n.LoopbackNode.Setattr(ctx, nil, in, out); errno != 0 {
		return errno
	}
	n.layer.sized(&out.Attr)
	return 0
}

// openFlags are the flags a file is opened with on the disk below: read
// and write always (the cache reads a page before it writes part of it,
// and a sync writes through whichever descriptor asks), never truncating,
// appending or syncing on its own — the cache does those.
func openFlags(flags uint32) (disk int, trunc, syncWrites bool) {
	trunc = flags&syscall.O_TRUNC != 0
	syncWrites = flags&(unix.O_SYNC|unix.O_DSYNC) != 0
	disk = int(flags) &^ (syscall.O_TRUNC | syscall.O_APPEND | unix.O_SYNC | unix.O_DSYNC | syscall.O_ACCMODE | fuse.FMODE_EXEC)
	return disk | syscall.O_RDWR | syscall.O_CLOEXEC, trunc, syncWrites
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.layer.gate(); errno != 0 {
		return nil, 0, errno
	}
	diskFlags, trunc, _ := openFlags(flags)
	fd, err := unix.Open(n.diskPath(), diskFlags|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	h, err := newHandle(fd, n, n.EmbeddedInode(), n.rel(), flags)
	if err != nil {
		unix.Close(fd)
		return nil, 0, fs.ToErrno(err)
	}
	if trunc {
		h.e.file.Truncate(0)
	}
	return h, 0, 0
}

// Create makes the file on the disk below at once (the namespace is not
// cached); its content starts in the cache.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.layer.gate(); errno != 0 {
		return nil, nil, 0, errno
	}
	p := filepath.Join(n.diskPath(), name)
	diskFlags, trunc, _ := openFlags(flags)
	var before unix.Stat_t
	isNew := unix.Lstat(p, &before) != nil
	fd, err := unix.Open(p, diskFlags|unix.O_CREAT|unix.O_NOFOLLOW, mode)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	if os.Getuid() == 0 {
		if caller, ok := fuse.FromContext(ctx); ok {
			unix.Fchown(fd, int(caller.Uid), int(caller.Gid))
		}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, 0, fs.ToErrno(err)
	}
	child := n.layer.newNode(n.RootData, n.EmbeddedInode(), name, &st).(*node)
	ch := n.NewInode(ctx, child, fs.StableAttr{Mode: st.Mode, Ino: st.Ino})
	h, err := newHandle(fd, child, ch, filepath.Join(n.rel(), name), flags)
	if err != nil {
		unix.Close(fd)
		return nil, nil, 0, fs.ToErrno(err)
	}
	if trunc {
		h.e.file.Truncate(0)
	}
	if isNew {
		n.made(name, false)
	}
	out.FromStat(&st)
	n.layer.sized(&out.Attr)
	return ch, h, 0, 0
}

// lastLink is the inode number of name in the directory if removing that
// name removes the file's last link (0 otherwise).
func (n *node) lastLink(dir, name string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(dir, name), &st); err != nil {
		return 0
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink > 1 {
		return 0
	}
	return st.Ino
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if errno := n.layer.gate(); errno != 0 {
		return errno
	}
	if n.layer.names != nil {
		return n.removeAside(name, false)
	}
	ino := n.lastLink(n.diskPath(), name)
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 && ino != 0 {
		n.layer.forget(ino)
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if errno := n.layer.gate(); errno != 0 {
		return errno
	}
	if np, ok := newParent.(*node); ok && n.layer.names != nil {
		return n.renameJournalled(name, np, newName, flags)
	}
	var ino uint64
	if np, ok := newParent.(*node); ok && flags&unix.RENAME_EXCHANGE == 0 {
		ino = n.lastLink(np.diskPath(), newName)
	}
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	if errno == 0 && ino != 0 {
		n.layer.forget(ino)
	}
	return errno
}

// Mkdir, Rmdir, Link, Symlink and Mknod are the loopback's, held while
// the power is cut like every call that changes the disk below.

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.layer.gate(); errno != 0 {
		return nil, errno
	}
	in, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.made(name, true)
	}
	return in, errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if errno := n.layer.gate(); errno != 0 {
		return errno
	}
	if n.layer.names != nil {
		return n.removeAside(name, true)
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.layer.gate(); errno != 0 {
		return nil, errno
	}
	in, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		n.made(name, false)
	}
	return in, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.layer.gate(); errno != 0 {
		return nil, errno
	}
	in, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno == 0 {
		n.made(name, false)
	}
	return in, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.layer.gate(); errno != 0 {
		return nil, errno
	}
	in, errno := n.LoopbackNode.Mknod(ctx, name, mode, dev, out)
	if errno == 0 {
		n.made(name, false)
	}
	return in, errno
}

// CopyFileRange is refused as not implemented, so the kernel copies
// through reads and writes, which go through the cache.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// handle is an open file: a descriptor on the disk below, read and
// written through the file's cache.
type handle struct {
	fd         int
	e          *entry // the file's cache
	node       *node
	syncWrites bool // opened O_SYNC or O_DSYNC
	dataOnly   bool // O_DSYNC without O_SYNC: each write is an fdatasync
}

// syncer is the disk below as a sync of this handle should sync it.
func (h *handle) syncer(dataOnly bool) Disk {
	if dataOnly {
		return dataDisk{disk(h.fd)}
	}
	return disk(h.fd)
}

// disk is the descriptor as the cache's Disk.
type disk int

func (d disk) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pread(int(d), p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

func (d disk) WriteAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pwrite(int(d), p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}

func (d disk) Truncate(size int64) error { return unix.Ftruncate(int(d), size) }
func (d disk) Sync() error               { return unix.Fsync(int(d)) }

// dataDisk is a descriptor whose sync is fdatasync: what fdatasync and
// O_DSYNC ask of the disk below (the data, and the size where it moved),
// no more. The layer syncs the disk below as the program asked, so a
// sync costs about what it costs without the layer.
type dataDisk struct{ disk }

func (d dataDisk) Sync() error { return unix.Fdatasync(int(d.disk)) }

// fsyncDataOnly is FUSE's FUSE_FSYNC_FDATASYNC: the fsync is an fdatasync.
const fsyncDataOnly = 1

// newHandle is a handle on fd, open on the file in is and path names,
// attached to the file's cache.
func newHandle(fd int, n *node, in *fs.Inode, path string, flags uint32) (*handle, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	_, _, syncWrites := openFlags(flags)
	e := n.layer.attach(&st, in, path)
	return &handle{fd: fd, e: e, node: n, syncWrites: syncWrites, dataOnly: flags&unix.O_SYNC != unix.O_SYNC}, nil
}

func (h *handle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.e.file.ReadAt(disk(h.fd), dest, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(_ context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	l := h.node.layer
	if errno := l.gate(); errno != 0 {
		return 0, errno
	}
	f := h.e.file
	n, err := f.WriteAt(disk(h.fd), data, off)
	if err == nil && h.syncWrites {
		// A synced write is a sync the trigger counts.
		if errno := l.synced(h.e, func() error { return f.Sync(h.syncer(h.dataOnly)) }); errno != 0 {
			return 0, errno
		}
	}
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	return uint32(n), 0
}

// Fsync writes the file's cache to the disk below (its pages, and its
// size: fdatasync too must make a new size durable) and syncs the disk
// below the way it was asked: fsync or fdatasync.
//
// On a descriptor opened O_SYNC or O_DSYNC the kernel follows every write
// with an fsync of its own, after Write has already synced it. When the
// file has nothing unsynced and this fsync asks no more than the writes
// did, the disk below holds what it should and was synced: a second sync
// of it would make one synchronous write cost two.
func (h *handle) Fsync(_ context.Context, flags uint32) syscall.Errno {
	l := h.node.layer
	if errno := l.gate(); errno != 0 {
		return errno
	}
	dataOnly := flags&fsyncDataOnly != 0
	d := h.syncer(dataOnly)
	f := h.e.file
	if h.syncWrites && (dataOnly || !h.dataOnly) && !f.Dirty() {
		return 0
	}
	return l.synced(h.e, func() error { return f.Sync(d) })
}

// Flush (a close) writes nothing: closing a file does not make it
// durable.
func (h *handle) Flush(context.Context) syscall.Errno { return 0 }

// Release detaches the handle from the file's cache before it closes the
// descriptor below: until then the file's inode number cannot go to
// another file.
func (h *handle) Release(context.Context) syscall.Errno {
	h.node.layer.detach(h.e)
	return fs.ToErrno(unix.Close(h.fd))
}

func (h *handle) Getattr(_ context.Context, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(h.fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	h.node.layer.sized(&out.Attr)
	return 0
}

// Allocate is fallocate: the size it sets and the zeros it writes are
// kept in the cache like writes; space reservation alone
// (FALLOC_FL_KEEP_SIZE) does nothing.
func (h *handle) Allocate(_ context.Context, off, size uint64, mode uint32) syscall.Errno {
	if errno := h.node.layer.gate(); errno != 0 {
		return errno
	}
	keep := mode&unix.FALLOC_FL_KEEP_SIZE != 0
	zero := mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0
	if mode&^(unix.FALLOC_FL_KEEP_SIZE|unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0 {
		return syscall.EOPNOTSUPP
	}
	if keep && !zero {
		return 0
	}
	f := h.e.file
	end := int64(off + size)
	if zero {
		limit := end
		if keep {
			limit = min(end, f.Size())
		}
		if limit > int64(off) {
			if _, err := f.WriteAt(disk(h.fd), make([]byte, limit-int64(off)), int64(off)); err != nil {
				return fs.ToErrno(err)
			}
		}
	}
	if !keep {
		f.Extend(end)
	}
	return 0
}

// Lseek leaves SEEK_DATA and SEEK_HOLE to the kernel's generic answer:
// the disk's holes are not the cache's.
func (h *handle) Lseek(context.Context, uint64, uint32) (uint64, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// Mount mounts the layer at dir over the directory disk (which must not
// be inside dir), with the kernel's permission checks and access for
// every user (the lock servers run as their own users). It mounts with
// mount(2) itself, as root: no fusermount.
func Mount(dir, disk string, opts Options) (*fuse.Server, *Layer, error) {
	var st syscall.Stat_t
	err := syscall.Stat(disk, &st)
	if err != nil {
		return nil, nil, err
	}
	l := newLayer(filepath.Clean(dir), disk, opts)
	if opts.LoseNames {
		if l.names, err = newNames(disk); err != nil {
			return nil, nil, fmt.Errorf("making the place unlinked files wait in: %w", err)
		}
	}
	root := &fs.LoopbackRoot{Path: disk, Dev: uint64(st.Dev), NewNode: l.newNode}
	rn := l.newNode(root, nil, "", &st)
	root.RootNode = rn
	timeout := time.Second
	srv, err := fs.Mount(dir, rn, &fs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:        true,
			DirectMount:       true,
			DirectMountStrict: true,
			FsName:            disk,
			Name:              "lossyfs",
			Options:           []string{"default_permissions"},
			// Without it the kernel asks for security.capability before
			// every write (to clear it), a round trip through this
			// daemon as costly as the write itself. None of the lock
			// services keeps extended attributes; with ENOSYS the
			// kernel stops asking after the first.
			DisableXAttrs: true,
		},
		AttrTimeout:  &timeout,
		EntryTimeout: &timeout,
	})
	if err != nil {
		return nil, nil, err
	}
	return srv, l, nil
}
