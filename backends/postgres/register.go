package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/usage"
)

func init() {
	registry.Register(registry.Info{
		NoExpiredGrants: "the lease recipe grants in one UPDATE that takes only a free or expired row, and an advisory lock belongs to the open connection: neither can be granted on an expired lease",
		DataDir:         DataDir,
		// pg_wal's segments, named by 24 hex digits (timeline first).
		DataLog: "0000000[0-9A-F]*",
		Name:    "postgres", Server: "PostgreSQL", VersionQuery: VersionQuery, Recipes: Recipes, Clusters: []registry.Cluster{registry.ClusterDocker},
		MinTTL: MinTTL, Builds: map[string]string{registry.DefaultVersion: "Debian's postgresql package (15)"},
		AllEndpoints: "PostgreSQL runs one server, so every client already speaks to that one",
		// The server's socket and its lock file live in SocketDir; a stale
		// lock file would outlast the server a warm cluster's next run
		// replaces.
		RunDirs: []string{SocketDir},
		Flags:   []usage.Flag{SynchronousCommitFlag, FsyncFlag},
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			return &DB{Recipe: s.Recipe, LeaseTTL: s.LeaseTTL,
				SynchronousCommit: s.Options[SynchronousCommitFlag.Name], Fsync: s.Options[FsyncFlag.Name]}, 1, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return OpenClient(spec, storage)
		},
		Durability: &registry.Durability{
			Recipe: RecipeLease, Fault: "power-loss",
			Why:  "one server holds the lease table, so one server's power cut is the whole service's",
			Safe: registry.Settings{Name: "safe", Options: map[string]string{SynchronousCommitFlag.Name: "on"}, What: "PostgreSQL's default: a commit's WAL flushed before it is acknowledged"},
			Relaxed: []registry.Settings{{Name: "relaxed", Options: map[string]string{SynchronousCommitFlag.Name: "off"},
				What: "synchronous_commit = off: PostgreSQL documents up to 3 × wal_writer_delay of commits lost"}},
		},
	})
	// A row in PostgreSQL, fenced in SQL: a shared storage every backend
	// can guard.
	registry.RegisterStorage(registry.StorageKind{
		Name: "postgres",
		Start: func(ctx context.Context, c nodes.Nodes, s registry.Setup) (string, string, error) {
			return StartStorage(ctx, c, s.LeaseTTL)
		},
		Open: func(_ context.Context, spec backends.ClientSpec, mode fenced.Mode) (fenced.Storage, error) {
			if spec.StorageURL == "" || spec.Secret == "" {
				return nil, errors.New("storage postgres needs its URL and password")
			}
			return NewStorage(spec.StorageURL, spec.Secret, mode)
		},
		Client: clientStorage,
	})
}

// The lock server's durability settings, as PostgreSQL names them; each
// default is PostgreSQL's own (on). The storage server is not affected.
var (
	SynchronousCommitFlag = usage.Flag{Name: "postgres-synchronous-commit",
		Usage: "the lock server's synchronous_commit: off acknowledges a commit before its WAL is flushed (on, PostgreSQL's default; local, remote_write, remote_apply)",
		Check: oneOf("synchronous_commit", "on", "off", "local", "remote_write", "remote_apply")}
	FsyncFlag = usage.Flag{Name: "postgres-fsync",
		Usage: "the lock server's fsync: off never flushes WAL or data to disk (on, PostgreSQL's default)",
		Check: oneOf("fsync", "on", "off")}
)

func oneOf(setting string, accepted ...string) func(string) error {
	return func(v string) error {
		if v == "" || slices.Contains(accepted, v) {
			return nil
		}
		return fmt.Errorf("%q is no value of PostgreSQL's %s (accepted: %v)", v, setting, accepted)
	}
}
