package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/lockclient"
)

// StorageSchema is the storage server's schema: a register per key with
// the highest token it has admitted.
const StorageSchema = `CREATE TABLE IF NOT EXISTS fencecheck_registers (
  key   text PRIMARY KEY,
  value bigint NOT NULL DEFAULT 0,
  fence bigint NOT NULL DEFAULT 0
);
`

// The storage's statements: fenced.Store's rule in SQL. A checked op is
// admitted only when its token is not below the row's fence, and moves
// the fence in the same statement; the row is locked for the statement,
// so the check and the move are one step.
const (
	// storageCreateSQL makes a key's row on first use, so that an
	// admitting statement that changes no row means "fenced", never
	// "missing".
	storageCreateSQL = `INSERT INTO fencecheck_registers (key) VALUES ($1) ON CONFLICT (key) DO NOTHING`
	// Reads: unchecked (none, writes), or checked and moving the fence
	// (all).
	storageReadSQL       = `SELECT value FROM fencecheck_registers WHERE key = $1`
	storageReadFencedSQL = `UPDATE fencecheck_registers SET fence = $2 WHERE key = $1 AND fence <= $2 RETURNING value`
	// Writes: unchecked (none), or checked and moving the fence (writes,
	// all).
	storageWriteSQL       = `UPDATE fencecheck_registers SET value = $2 WHERE key = $1`
	storageWriteFencedSQL = `UPDATE fencecheck_registers SET value = $3, fence = $2 WHERE key = $1 AND fence <= $2 RETURNING fence`
)

// StartStorage runs PostgreSQL in the storage node with the register table
// and returns the URL clients use (no password in it) and the generated
// password.
func StartStorage(ctx context.Context, c nodes.Nodes, ttl time.Duration) (url, secret string, err error) {
	secret, err = newSecret()
	if err != nil {
		return "", "", err
	}
	s := &server{node: nodes.StorageNode, secret: secret, timeouts: StorageTimeouts(ttl), schema: StorageSchema}
	if err := s.setup(ctx, c); err != nil {
		return "", "", err
	}
	return s.url(), secret, nil
}

// Storage is the fenced register in PostgreSQL: fenced.Storage over a
// small pool of connections to the storage server, checking tokens per
// mode exactly like fenced.Store.
type Storage struct {
	pool *pgxpool.Pool
	mode fenced.Mode

	mu   sync.Mutex
	made map[string]bool // keys whose row this client has seen to
}

// NewStorage connects (lazily) to the storage server at url.
func NewStorage(url, secret string, mode fenced.Mode) (*Storage, error) {
	pool, err := newPool(url, secret, newHolder(), 2)
	if err != nil {
		return nil, err
	}
	return &Storage{pool: pool, mode: mode, made: map[string]bool{}}, nil
}

// ensure makes key's row if this client has not yet. Creating a row
// changes nothing a reader can see (it holds 0 with fence 0, what a
// missing register means), so a failure here is a definite failure of the
// op it precedes.
func (s *Storage) ensure(ctx context.Context, conn *pgxpool.Conn, key string) error {
	s.mu.Lock()
	made := s.made[key]
	s.mu.Unlock()
	if made {
		return nil
	}
	if _, err := conn.Exec(ctx, storageCreateSQL, key); err != nil {
		return lockclient.Failf("creating the row of %s: %v", key, err)
	}
	s.mu.Lock()
	s.made[key] = true
	s.mu.Unlock()
	return nil
}

func (s *Storage) Read(ctx context.Context, key string, token uint64) (int64, error) {
	t, err := bigint(token)
	if err != nil {
		return 0, err
	}
	var v int64
	err = onPool(ctx, s.pool, func(conn *pgxpool.Conn) error {
		if err := s.ensure(ctx, conn, key); err != nil {
			return err
		}
		if s.mode == fenced.All {
			err := conn.QueryRow(ctx, storageReadFencedSQL, key, t).Scan(&v)
			if noRows(err) {
				return lockclient.ErrFenced
			}
			return outcome(err)
		}
		return outcome(conn.QueryRow(ctx, storageReadSQL, key).Scan(&v))
	})
	return v, err
}

// ReadLockFree reads key's value for a reader that holds no lock: no
// token, no fence check, the fence untouched.
func (s *Storage) ReadLockFree(ctx context.Context, key string) (int64, error) {
	var v int64
	err := onPool(ctx, s.pool, func(conn *pgxpool.Conn) error {
		if err := s.ensure(ctx, conn, key); err != nil {
			return err
		}
		return outcome(conn.QueryRow(ctx, storageReadSQL, key).Scan(&v))
	})
	return v, err
}

func (s *Storage) Write(ctx context.Context, key string, token uint64, value int64) error {
	t, err := bigint(token)
	if err != nil {
		return err
	}
	return onPool(ctx, s.pool, func(conn *pgxpool.Conn) error {
		if err := s.ensure(ctx, conn, key); err != nil {
			return err
		}
		if s.mode == fenced.None {
			tag, err := conn.Exec(ctx, storageWriteSQL, key, value)
			if err != nil {
				return outcome(err)
			}
			if tag.RowsAffected() != 1 {
				return lockclient.Failf("no row for %s", key)
			}
			return nil
		}
		var fence int64
		err := conn.QueryRow(ctx, storageWriteFencedSQL, key, t, value).Scan(&fence)
		if noRows(err) {
			return lockclient.ErrFenced
		}
		return outcome(err)
	})
}

// Close closes the connections.
func (s *Storage) Close() { s.pool.Close() }

// String names the storage for messages.
func (s *Storage) String() string { return fmt.Sprintf("postgres storage (fencing %s)", s.mode) }
