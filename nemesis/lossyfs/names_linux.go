package lossyfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Directory entries under Options.LoseNames: a create, mkdir, link,
// symlink, mknod, rename, unlink or rmdir still goes to the disk below at
// once (programs see it), but is journalled until an fsync of a directory
// it touched commits it, and a cut undoes every change not committed, the
// last first. As in an ordered journal (ext4's), a commit takes every
// earlier change with it. An unlinked name's file (or a removed
// directory) is moved aside, beside the disk below, until its removal
// commits, so a cut can put it back.

// names is the journal of uncommitted directory changes.
type names struct {
	stash string // beside the disk below, on its filesystem

	mu   sync.Mutex
	seq  int
	ops  []nameOp
	held int // names undone or committed, for a cut's count
}

// nameOp is one directory change: the directories it touched (paths
// under the mount), how to undo it on the disk below, what its commit
// finishes, and the names the kernel must forget once it is undone.
type nameOp struct {
	dirs   []string
	undo   func() error
	commit func()
	notify []notice
}

type notice struct {
	parent *fs.Inode
	name   string
}

func newNames(disk string) (*names, error) {
	stash := filepath.Clean(disk) + ".unlinked"
	if err := os.RemoveAll(stash); err != nil {
		return nil, err
	}
	if err := os.Mkdir(stash, 0o700); err != nil {
		return nil, err
	}
	return &names{stash: stash}, nil
}

func (j *names) add(op nameOp) {
	j.mu.Lock()
	j.ops = append(j.ops, op)
	j.mu.Unlock()
}

// aside is a new path in the stash.
func (j *names) aside() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	return filepath.Join(j.stash, strconv.Itoa(j.seq))
}

// commitDir commits every change up to the last that touched dir.
func (j *names) commitDir(dir string) {
	j.mu.Lock()
	last := -1
	for i, op := range j.ops {
		for _, d := range op.dirs {
			if d == dir {
				last = i
			}
		}
	}
	done := j.ops[:last+1]
	j.ops = append([]nameOp(nil), j.ops[last+1:]...)
	j.mu.Unlock()
	for _, op := range done {
		if op.commit != nil {
			op.commit()
		}
	}
}

// undoAll undoes every uncommitted change, the last first, and returns
// how many it undid.
func (j *names) undoAll() (int, []notice, error) {
	j.mu.Lock()
	ops := j.ops
	j.ops = nil
	j.mu.Unlock()
	var errs []error
	var ns []notice
	for i := len(ops) - 1; i >= 0; i-- {
		if err := ops[i].undo(); err != nil {
			errs = append(errs, err)
		}
		ns = append(ns, ops[i].notify...)
	}
	return len(ops), ns, errors.Join(errs...)
}

// undoNames undoes the uncommitted directory changes and tells the
// kernel to forget the names they touched.
func (l *Layer) undoNames() (int, error) {
	if l.names == nil {
		return 0, nil
	}
	n, ns, err := l.names.undoAll()
	for _, nt := range ns {
		if nt.parent != nil {
			nt.parent.NotifyEntry(nt.name)
		}
	}
	return n, err
}

// made journals a new name: its undo removes it, if it is still the
// file it was (and forgets the file's cache).
func (n *node) made(name string, dir bool) {
	j := n.layer.names
	if j == nil {
		return
	}
	p := filepath.Join(n.diskPath(), name)
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return
	}
	ino := st.Ino
	n.layer.names.add(nameOp{dirs: []string{n.rel()}, notify: []notice{{n.EmbeddedInode(), name}},
		undo: func() error {
			var now unix.Stat_t
			if unix.Lstat(p, &now) != nil || now.Ino != ino {
				return nil
			}
			if dir {
				return unix.Rmdir(p)
			}
			n.layer.forget(ino)
			return unix.Unlink(p)
		}})
}

// removeAside removes name (a file, or an empty directory) by moving it
// into the stash, journalled: undone, it moves back; committed, it is
// removed for good.
func (n *node) removeAside(name string, dir bool) syscall.Errno {
	p := filepath.Join(n.diskPath(), name)
	ino := n.lastLink(n.diskPath(), name)
	if dir {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fs.ToErrno(err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return syscall.ENOTDIR
		}
		if ents, err := os.ReadDir(p); err != nil || len(ents) > 0 {
			if err != nil {
				return fs.ToErrno(err)
			}
			return syscall.ENOTEMPTY
		}
	} else {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fs.ToErrno(err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return syscall.EISDIR
		}
	}
	aside := n.layer.names.aside()
	if err := unix.Rename(p, aside); err != nil {
		return fs.ToErrno(err)
	}
	l := n.layer
	l.names.add(nameOp{dirs: []string{n.rel()}, notify: []notice{{n.EmbeddedInode(), name}},
		undo: func() error { return unix.Renameat2(unix.AT_FDCWD, aside, unix.AT_FDCWD, p, unix.RENAME_NOREPLACE) },
		commit: func() {
			if dir {
				unix.Rmdir(aside)
				return
			}
			unix.Unlink(aside)
			if ino != 0 {
				l.forget(ino)
			}
		}})
	return 0
}

// renameJournalled is Rename under LoseNames: a name it replaces is moved
// aside first, so the undo can move the renamed file back and the
// replaced one after it.
func (n *node) renameJournalled(name string, np *node, newName string, flags uint32) syscall.Errno {
	from, to := filepath.Join(n.diskPath(), name), filepath.Join(np.diskPath(), newName)
	l := n.layer
	notify := []notice{{n.EmbeddedInode(), name}, {np.EmbeddedInode(), newName}}
	dirs := []string{n.rel(), np.rel()}
	if flags&unix.RENAME_EXCHANGE != 0 {
		if err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_EXCHANGE); err != nil {
			return fs.ToErrno(err)
		}
		l.names.add(nameOp{dirs: dirs, notify: notify,
			undo: func() error { return unix.Renameat2(unix.AT_FDCWD, to, unix.AT_FDCWD, from, unix.RENAME_EXCHANGE) }})
		return 0
	}
	var st, tst unix.Stat_t
	if err := unix.Lstat(from, &st); err != nil {
		return fs.ToErrno(err)
	}
	replaced := ""
	var replacedIno uint64
	if err := unix.Lstat(to, &tst); err == nil {
		if flags&unix.RENAME_NOREPLACE != 0 {
			return syscall.EEXIST
		}
		if tst.Ino == st.Ino {
			return 0 // the same file: rename does nothing
		}
		if (tst.Mode&unix.S_IFMT == unix.S_IFDIR) != (st.Mode&unix.S_IFMT == unix.S_IFDIR) {
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				return syscall.ENOTDIR
			}
			return syscall.EISDIR
		}
		replacedIno = np.lastLink(np.diskPath(), newName)
		replaced = l.names.aside()
		if err := unix.Rename(to, replaced); err != nil {
			return fs.ToErrno(err)
		}
	}
	if err := unix.Rename(from, to); err != nil {
		if replaced != "" {
			unix.Rename(replaced, to)
		}
		return fs.ToErrno(err)
	}
	l.names.add(nameOp{dirs: dirs, notify: notify,
		undo: func() error {
			if err := unix.Renameat2(unix.AT_FDCWD, to, unix.AT_FDCWD, from, unix.RENAME_NOREPLACE); err != nil {
				return fmt.Errorf("moving %s back to %s: %w", to, from, err)
			}
			if replaced != "" {
				return unix.Rename(replaced, to)
			}
			return nil
		},
		commit: func() {
			if replaced == "" {
				return
			}
			if tst.Mode&unix.S_IFMT == unix.S_IFDIR {
				unix.Rmdir(replaced)
				return
			}
			unix.Unlink(replaced)
			if replacedIno != 0 {
				l.forget(replacedIno)
			}
		}})
	return 0
}

// dirHandle is an open directory: the loopback's stream, whose fsync
// commits the directory's changes under LoseNames.
type dirHandle struct {
	fs.DirStream
	n *node
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileFsyncdirer   = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
)

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return fh, fl, errno
	}
	ds, ok := fh.(fs.DirStream)
	if !ok {
		return fh, fl, 0
	}
	return &dirHandle{DirStream: ds, n: n}, fl, 0
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if r, ok := d.DirStream.(fs.FileReaddirenter); ok {
		return r.Readdirent(ctx)
	}
	if !d.HasNext() {
		return nil, 0
	}
	e, errno := d.Next()
	return &e, errno
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	if r, ok := d.DirStream.(fs.FileReleasedirer); ok {
		r.Releasedir(ctx, flags)
		return
	}
	d.Close()
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if s, ok := d.DirStream.(fs.FileSeekdirer); ok {
		return s.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

// Fsyncdir commits the directory's changes (and every earlier one), then
// syncs it below.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if errno := d.n.layer.gate(); errno != 0 {
		return errno
	}
	if j := d.n.layer.names; j != nil {
		j.commitDir(d.n.rel())
	}
	if s, ok := d.DirStream.(fs.FileFsyncdirer); ok {
		return s.Fsyncdir(ctx, flags)
	}
	return 0
}
