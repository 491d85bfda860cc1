package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

// The lease recipe's statements. Every time is the server's
// clock_timestamp(): no client clock takes part.
const (
	// leaseCreateSQL makes a key's row, free, on first use.
	leaseCreateSQL = `INSERT INTO fencecheck_leases (key, holder, token, expires_at)
VALUES ($1, NULL, 0, '-infinity') ON CONFLICT (key) DO NOTHING`
	// leaseAcquireSQL takes the row only when it is free (released) or
	// expired, and bumps its token, in one statement. When the lease is
	// held and live no row comes back; such a try changes nothing, so it
	// takes no row lock and writes no WAL, and polling stays cheap. $3 is
	// the lease's length in seconds.
	leaseAcquireSQL = `UPDATE fencecheck_leases
   SET holder = $2, token = token + 1, expires_at = clock_timestamp() + $3::float8 * interval '1 second'
 WHERE key = $1 AND expires_at < clock_timestamp()
RETURNING token`
	// leaseRenewSQL extends the lease only while it is still this
	// holder's grant and has not expired.
	leaseRenewSQL = `UPDATE fencecheck_leases
   SET expires_at = clock_timestamp() + $4::float8 * interval '1 second'
 WHERE key = $1 AND holder = $2 AND token = $3 AND expires_at >= clock_timestamp()`
	// leaseReleaseSQL frees the row if this grant still holds it.
	leaseReleaseSQL = `UPDATE fencecheck_leases
   SET holder = NULL, expires_at = '-infinity'
 WHERE key = $1 AND holder = $2 AND token = $3`
)

// LockSchema is the lock server's schema: the lease table for the lease
// recipe and the token sequence for the advisory one.
const LockSchema = `CREATE TABLE IF NOT EXISTS fencecheck_leases (
  key        text PRIMARY KEY,
  holder     text,
  token      bigint NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS fencecheck_tokens;
`

// errNotHolder is a release the server refused: the row is no longer this
// grant's (it expired, or was taken since).
var errNotHolder = lockclient.Failf("not-holder")

// LeaseClient is the lease recipe: a row per key in fencecheck_leases
// that a client takes when it is free or expired by the server's clock,
// bumping its token; a keepalive renews it every TTL/3; release frees it.
// Like the memory backend's client, it refuses to read or write once its
// keepalive has learnt that the lease is gone — and only then: it does not
// guess from its own clock, which is what the fencing tests are about.
type LeaseClient struct {
	pool         *pgxpool.Pool
	fenced.Guard // Read and Write, through the lease check
	ttl          time.Duration
	holder       string
	leases       backends.Leases[*backends.Grant]

	mu   sync.Mutex
	made map[string]bool // keys whose row this client has seen to
}

// NewLeaseClient connects (lazily) to the lock server at url.
func NewLeaseClient(url, secret string, ttl time.Duration, storage fenced.Storage) (*LeaseClient, error) {
	holder := newHolder()
	// One connection for the ops, one for the keepalive.
	pool, err := newPool(url, secret, holder, 2)
	if err != nil {
		return nil, err
	}
	c := &LeaseClient{pool: pool, ttl: ttl, holder: holder, made: map[string]bool{}}
	c.Guard = fenced.Guard{Storage: storage, Check: c.leases.Check}
	return c, nil
}

func (c *LeaseClient) Acquire(ctx context.Context, key string) (uint64, error) {
	if err := c.leases.Free(key); err != nil {
		return 0, err
	}
	// Try until granted or the op's deadline is near. A lease held by
	// someone else, and a try that certainly did nothing (the server is
	// down or starting up, no connection), are tried again after a short
	// wait; a try whose outcome is unknown ends the op.
	var last error
	var p poller
	for {
		if !p.more(ctx) {
			return 0, notGranted(ctx, last)
		}
		token, err := c.try(ctx, key)
		switch {
		case err == nil:
			g := backends.NewGrant(token)
			c.leases.Put(key, g)
			g.KeepAlive(c.ttl/3, func(context.Context) bool { return c.renew(key, token) })
			return token, nil
		case noRows(err):
			last = nil // held by someone else
		case !definite(err):
			return 0, err
		default:
			last = err
		}
	}
}

// try makes key's row if this client has not yet, then tries to take the
// lease once. pgx.ErrNoRows: the lease is held.
func (c *LeaseClient) try(ctx context.Context, key string) (uint64, error) {
	c.mu.Lock()
	made := c.made[key]
	c.mu.Unlock()
	var token int64
	err := onPool(ctx, c.pool, func(conn *pgxpool.Conn) error {
		if !made {
			// A free row changes nothing anyone can see: a failure to
			// make it is a definite failure of this try.
			if _, err := conn.Exec(ctx, leaseCreateSQL, key); err != nil {
				return lockclient.Failf("creating the row of %s: %v", key, err)
			}
			c.mu.Lock()
			c.made[key] = true
			c.mu.Unlock()
		}
		err := conn.QueryRow(ctx, leaseAcquireSQL, key, c.holder, c.ttl.Seconds()).Scan(&token)
		if noRows(err) {
			return err
		}
		return outcome(err)
	})
	return uint64(token), err
}

// renew extends the lease once, and says whether it is lost: the renewal
// found it no longer this grant's. A renewal that errs (a timeout, a lost
// connection) proves nothing: the next one tries again.
func (c *LeaseClient) renew(key string, token uint64) (lost bool) {
	ctx, cancel := context.WithTimeout(context.Background(), c.ttl)
	defer cancel()
	var renewed bool
	err := onPool(ctx, c.pool, func(conn *pgxpool.Conn) error {
		tag, err := conn.Exec(ctx, leaseRenewSQL, key, c.holder, int64(token), c.ttl.Seconds())
		renewed = tag.RowsAffected() == 1
		return err
	})
	return err == nil && !renewed
}

// Release stops the keepalive and frees the row. A row that is no longer
// this grant's (expired, taken) is a definite failure: nothing changed.
func (c *LeaseClient) Release(ctx context.Context, key string) error {
	g, err := c.leases.Take(key)
	if err != nil {
		return err
	}
	g.Stop()
	var released bool
	err = onPool(ctx, c.pool, func(conn *pgxpool.Conn) error {
		tag, err := conn.Exec(ctx, leaseReleaseSQL, key, c.holder, int64(g.Token()))
		released = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return outcome(err)
	}
	if !released {
		return errNotHolder
	}
	return nil
}

// Close stops every keepalive and closes the connections; leases left
// behind expire on their own.
func (c *LeaseClient) Close() error {
	for _, g := range c.leases.TakeAll() {
		g.Abandon()
	}
	c.pool.Close()
	closeStorage(c.Guard.Storage)
	return nil
}
