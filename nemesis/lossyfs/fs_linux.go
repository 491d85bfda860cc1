package lossyfs

import (
	"context"
	"fmt"
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
	disk string

	mu    sync.Mutex
	files map[uint64]*entry
}

type entry struct {
	file *File
	// inode is the last FUSE inode the file was written through: a drop
	// tells the kernel to forget what it cached of it.
	inode *fs.Inode
	path  string // for Status, as last seen
}

func newLayer(disk string) *Layer { return &Layer{disk: disk, files: map[uint64]*entry{}} }

// file is the cache of inode ino, nil when nothing was ever written to it.
func (l *Layer) file(ino uint64) *File {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.files[ino]; e != nil {
		return e.file
	}
	return nil
}

// fileFor is the cache of the file fd is open on, made (with the disk's
// size) on first use.
func (l *Layer) fileFor(fd int, in *fs.Inode, path string) (*File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	return l.fileOf(st.Ino, func() (*unix.Stat_t, error) { return &st, nil }, in, path)
}

// fileOf is fileFor for a descriptor whose inode number below is known:
// a write, the commonest call, then costs no fstat once the cache exists
// (stat is asked only to make it). It notes in as the file's inode and
// path as its name, as last seen.
func (l *Layer) fileOf(ino uint64, stat func() (*unix.Stat_t, error), in *fs.Inode, path string) (*File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.files[ino]
	if e == nil {
		st, err := stat()
		if err != nil {
			return nil, err
		}
		e = &entry{file: NewFile(st.Size)}
		l.files[ino] = e
	}
	if in != nil {
		e.inode = in
	}
	e.path = path
	return e.file, nil
}

// forget stops following inode ino: its last name is gone, and the disk
// below may hand its number to a new file. Descriptors still open on it
// keep its cache.
func (l *Layer) forget(ino uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.files, ino)
}

// Drop forgets everything unsynced in every file, and tells the kernel
// to forget what it cached of each file that changed.
func (l *Layer) Drop() Dropped {
	l.mu.Lock()
	es := make([]*entry, 0, len(l.files))
	for _, e := range l.files {
		es = append(es, e)
	}
	l.mu.Unlock()
	var d Dropped
	for _, e := range es {
		b, changed := e.file.Drop()
		if !changed {
			continue
		}
		d.Files++
		d.Bytes += b
		if e.inode != nil {
			// Data and attributes: the size the kernel holds is the
			// cache's, not the disk's.
			e.inode.NotifyContent(0, 0)
		}
	}
	return d
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
	diskFlags, trunc, _ := openFlags(flags)
	fd, err := unix.Open(n.diskPath(), diskFlags|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	h, err := newHandle(fd, n, flags)
	if err != nil {
		unix.Close(fd)
		return nil, 0, fs.ToErrno(err)
	}
	if trunc {
		file, err := n.layer.fileFor(fd, n.EmbeddedInode(), n.rel())
		if err != nil {
			unix.Close(fd)
			return nil, 0, fs.ToErrno(err)
		}
		file.Truncate(0)
	}
	return h, 0, 0
}

// Create makes the file on the disk below at once (the namespace is not
// cached); its content starts in the cache.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p := filepath.Join(n.diskPath(), name)
	diskFlags, trunc, _ := openFlags(flags)
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
	h, err := newHandle(fd, child, flags)
	if err != nil {
		unix.Close(fd)
		return nil, nil, 0, fs.ToErrno(err)
	}
	if trunc {
		file, err := n.layer.fileFor(fd, ch, filepath.Join(n.rel(), name))
		if err != nil {
			unix.Close(fd)
			return nil, nil, 0, fs.ToErrno(err)
		}
		file.Truncate(0)
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
	ino := n.lastLink(n.diskPath(), name)
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 && ino != 0 {
		n.layer.forget(ino)
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
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

// CopyFileRange is refused as not implemented, so the kernel copies
// through reads and writes, which go through the cache.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// handle is an open file: a descriptor on the disk below, read and
// written through the file's cache.
type handle struct {
	fd         int
	ino        uint64 // on the disk below
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

func newHandle(fd int, n *node, flags uint32) (*handle, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	_, _, syncWrites := openFlags(flags)
	return &handle{fd: fd, ino: st.Ino, node: n, syncWrites: syncWrites, dataOnly: flags&unix.O_SYNC != unix.O_SYNC}, nil
}

func (h *handle) cached() *File { return h.node.layer.file(h.ino) }

// stat is the file below as the descriptor sees it now.
func (h *handle) stat() (*unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstat(h.fd, &st)
	return &st, err
}

func (h *handle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var n int
	var err error
	if f := h.cached(); f != nil {
		n, err = f.ReadAt(disk(h.fd), dest, off)
	} else {
		n, err = disk(h.fd).ReadAt(dest, off)
	}
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(_ context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f, err := h.node.layer.fileOf(h.ino, h.stat, h.node.EmbeddedInode(), h.node.rel())
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	n, err := f.WriteAt(disk(h.fd), data, off)
	if err == nil && h.syncWrites {
		err = f.Sync(h.syncer(h.dataOnly))
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
	dataOnly := flags&fsyncDataOnly != 0
	d := h.syncer(dataOnly)
	if f := h.cached(); f != nil {
		if h.syncWrites && (dataOnly || !h.dataOnly) && !f.Dirty() {
			return 0
		}
		return fs.ToErrno(f.Sync(d))
	}
	return fs.ToErrno(d.Sync())
}

// Flush (a close) writes nothing: closing a file does not make it
// durable.
func (h *handle) Flush(context.Context) syscall.Errno { return 0 }

func (h *handle) Release(context.Context) syscall.Errno {
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
	keep := mode&unix.FALLOC_FL_KEEP_SIZE != 0
	zero := mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0
	if mode&^(unix.FALLOC_FL_KEEP_SIZE|unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0 {
		return syscall.EOPNOTSUPP
	}
	if keep && !zero {
		return 0
	}
	f, err := h.node.layer.fileFor(h.fd, h.node.EmbeddedInode(), h.node.rel())
	if err != nil {
		return fs.ToErrno(err)
	}
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
func Mount(dir, disk string) (*fuse.Server, *Layer, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(disk, &st); err != nil {
		return nil, nil, err
	}
	l := newLayer(disk)
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
