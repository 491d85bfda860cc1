// Package lossyfs is the filesystem layer behind the power faults: a FUSE
// filesystem, mounted over a lock service's data directory in a server
// node, that keeps what is written to a file in its own cache until the
// file is synced (fsync, fdatasync, or a write through a descriptor
// opened O_SYNC or O_DSYNC), and that on command (Drop) forgets
// everything not synced, so every file returns to its last synced content
// and size — what a power cut does to a machine's page cache, which a
// process kill never does.
//
// The rules, and how they stand beside lazyfs's (docs/power-loss.md):
//
//   - File data and size (write, truncate, fallocate) stay in the layer's
//     cache until the file is synced; a sync writes them to the disk
//     below and fsyncs it. A file never synced keeps the content it had
//     on disk when it was created: none.
//   - The namespace (create, mkdir, rename, unlink, link, symlink, rmdir)
//     and the inode's metadata (mode, owner, times) go to the disk below
//     at once, as lazyfs does: a directory fsync has nothing left to
//     write and is passed through. So a file renamed into place without
//     its own fsync is there after a drop, with the content it last
//     synced (an empty file, for a file written and renamed without any
//     fsync: ext4's zero-length file after a crash), and an unlinked
//     file stays unlinked. Under Options.LoseNames a name change is
//     journalled until an fsync of its directory, and a cut undoes the
//     rest (names_linux.go).
//   - A cut (cut.go) freezes the layer — every call that would change the
//     disk below waits, every process holding a file is SIGKILLed — on
//     command, at an instant, or before or after the Nth sync of a file
//     matching a glob; then drops. Under Options.KeepWrites a cut may keep
//     part of the unsynced writes (Torn: torn-op, torn-seq).
//   - A sync that fails partway puts back what it changed below.
//   - sync(2) and syncfs(2) do not reach a FUSE filesystem, so they sync
//     nothing here; the services fencecheck tests sync their files one by
//     one.
//   - Extended attributes are refused (ENOSYS): with them, the kernel
//     asked for security.capability before every write, one more round
//     trip through this process per write, and no lock service keeps any.
//
// As Jepsen does with lazyfs, the lock server dies first and the cache
// is dropped after: a drop under a running server would change
// files under its open descriptors, which no power cut does.
//
// The layer must never lose a synced byte, never write an unsynced byte
// to the disk below except as part of a sync, and never hold a file's
// content anywhere but in this process: it is the one place that decides
// what a power cut takes.
package lossyfs
