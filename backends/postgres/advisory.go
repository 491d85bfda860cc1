package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

// The advisory recipe's statements. The lock is a session-level advisory
// lock on a 64-bit hash of the key; the token, when the recipe takes one,
// comes from a sequence after the lock is granted, so tokens grow in the
// order grants happen.
const (
	advisoryLockSQL   = `SELECT pg_advisory_lock(hashtextextended($1, 0))`
	advisoryTokenSQL  = `SELECT nextval('fencecheck_tokens')`
	advisoryPingSQL   = `SELECT 1`
	advisoryUnlockSQL = `SELECT pg_advisory_unlock(hashtextextended($1, 0))`
)

// lockNotAvailable is the SQLSTATE of a lock wait ended by lock_timeout.
const lockNotAvailable = "55P03"

// session is one held advisory lock: the connection whose session holds
// it, its token and its keepalive.
type session struct {
	*backends.Grant
	// conn is used by the keepalive until the grant is stopped, then by
	// the release: never by two goroutines at once.
	conn *pgx.Conn
}

// AdvisoryClient is the advisory-lock recipe: each acquire opens a
// connection of its own and takes pg_advisory_lock on it; the lock lasts
// as long as that session. It has no expiry: the server frees it when the
// session ends — the client releasing or closing it, or the server ending
// a session it has heard nothing from (see LockTimeouts). The client pings
// the session every TTL/3, which keeps it from looking idle, and counts
// the lock lost as soon as a ping fails. With tokens, each grant takes
// the next value of a sequence; without, every token is 0.
type AdvisoryClient struct {
	url, secret  string
	ttl          time.Duration
	tokens       bool
	fenced.Guard // Read and Write, through the lease check
	holder       string
	leases       backends.Leases[*session]
}

// NewAdvisoryClient makes a client of the lock server at url; it connects
// on each acquire.
func NewAdvisoryClient(url, secret string, ttl time.Duration, tokens bool, storage fenced.Storage) (*AdvisoryClient, error) {
	if _, err := connConfig(url, secret, "check"); err != nil {
		return nil, err
	}
	c := &AdvisoryClient{url: url, secret: secret, ttl: ttl, tokens: tokens, holder: newHolder()}
	c.Guard = fenced.Guard{Storage: storage, Check: c.leases.Check}
	return c, nil
}

// lockTimeout is how long the server may wait for the lock: until a
// margin before the op's deadline, so that the server, not the client's
// context, ends a wait that is too long, and says so.
func lockTimeout(ctx context.Context) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, true // no deadline: wait for ever (lock_timeout 0)
	}
	left := time.Until(dl)
	t := left - min(pollMargin, left/5)
	return t, t >= 10*time.Millisecond
}

func (c *AdvisoryClient) Acquire(ctx context.Context, key string) (uint64, error) {
	if err := c.leases.Free(key); err != nil {
		return 0, err
	}
	conn, timeout, err := c.connect(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := conn.Exec(ctx, advisoryLockSQL, key); err != nil {
		go closeConn(conn)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == lockNotAvailable:
			return 0, lockclient.Failf("lock not granted within %s", timeout.Round(time.Millisecond))
		case ctx.Err() != nil:
			// pgx closed the connection when the context ended, so even a
			// grant that raced the deadline ends with the session, and no
			// token was ever taken for it: not granted.
			return 0, lockclient.Failf("lock not granted: %v", ctx.Err())
		}
		return 0, outcome(err)
	}
	var token int64
	if c.tokens {
		if err := conn.QueryRow(ctx, advisoryTokenSQL).Scan(&token); err != nil {
			// Closing the session frees the lock; whether the sequence
			// moved does not matter, no one holds its value.
			go closeConn(conn)
			return 0, outcome(err)
		}
	}
	s := &session{Grant: backends.NewGrant(uint64(token)), conn: conn}
	c.leases.Put(key, s)
	s.KeepAlive(c.ttl/3, func(context.Context) bool { return c.ping(s) })
	return s.Token(), nil
}

// connect opens the session for one acquire, its lock_timeout set to end
// the wait before the op's deadline. A server that refuses (down, starting
// up) or cannot be reached is tried again after a short wait: no session,
// no lock, nothing happened.
func (c *AdvisoryClient) connect(ctx context.Context) (*pgx.Conn, time.Duration, error) {
	var last error
	var p poller
	for {
		if !p.more(ctx) {
			return nil, 0, notGranted(ctx, last)
		}
		timeout, ok := lockTimeout(ctx)
		if !ok {
			return nil, 0, notGranted(ctx, last)
		}
		cfg, err := connConfig(c.url, c.secret, c.holder)
		if err != nil {
			return nil, 0, lockclient.Fail(err)
		}
		cfg.RuntimeParams["lock_timeout"] = fmt.Sprintf("%dms", timeout.Milliseconds())
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			return conn, timeout, nil
		}
		last = fmt.Errorf("no session: %w", err)
	}
}

// closeConn ends a session, waiting a little for the server to hear it.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn.Close(ctx)
}

// ping is the keepalive's check of the session, every TTL/3. A ping that
// fails means the session is gone or going (pgx closes a connection whose
// statement timed out), and the lock with it.
func (c *AdvisoryClient) ping(s *session) (lost bool) {
	ctx, cancel := context.WithTimeout(context.Background(), c.ttl/3)
	defer cancel()
	_, err := s.conn.Exec(ctx, advisoryPingSQL)
	return err != nil
}

// Release unlocks on the session and then ends it.
func (c *AdvisoryClient) Release(ctx context.Context, key string) error {
	s, err := c.leases.Take(key)
	if err != nil {
		return err
	}
	s.Stop()
	defer func() { go closeConn(s.conn) }()
	if s.Lost() {
		// The session is gone: the server freed the lock with it.
		return errNotHolder
	}
	var unlocked bool
	if err := s.conn.QueryRow(ctx, advisoryUnlockSQL, key).Scan(&unlocked); err != nil {
		return outcome(err)
	}
	if !unlocked {
		return errNotHolder
	}
	return nil
}

// Close ends every session this client holds, which frees their locks
// once the server hears of it.
func (c *AdvisoryClient) Close() error {
	for _, s := range c.leases.TakeAll() {
		s.Stop()
		closeConn(s.conn)
	}
	closeStorage(c.Guard.Storage)
	return nil
}
