package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencecheck/fencecheck/lockclient"
)

// outcome classifies an error from a statement, by the rules of
// backends.Client: an error the server answered with (a *pgconn.PgError)
// ended the statement's transaction before it committed, so the statement
// did not happen; so with an error pgx raised before sending anything
// (pgconn.SafeToRetry). A timeout or a connection that broke while the
// statement was out leaves its outcome unknown.
func outcome(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) || pgconn.SafeToRetry(err) {
		return lockclient.Fail(err)
	}
	return err
}

// connConfig is the configuration of a connection to url (which carries
// no password) logging in with secret, named app in the server's log.
func connConfig(url, secret, app string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.Password = secret
	cfg.ConnectTimeout = 5 * time.Second
	cfg.RuntimeParams["application_name"] = app
	return cfg, nil
}

// newPool is a small pool of connections to url. It connects lazily, so
// opening a client never waits for the server.
func newPool(url, secret, app string, size int32) (*pgxpool.Pool, error) {
	cc, err := connConfig(url, secret, app)
	if err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	pc.ConnConfig = cc
	pc.MaxConns = size
	pc.MinConns = 0
	// The lock server ends sessions idle for a lease's length; the pool
	// pings a connection idle for over a second before handing it out,
	// and drops those the server ended.
	pc.MaxConnIdleTime = 30 * time.Second
	pc.HealthCheckPeriod = time.Second
	return pgxpool.NewWithConfig(context.Background(), pc)
}

// onPool runs f on a connection of p. Failing to get one is a definite
// failure: none of f's statements was sent.
func onPool(ctx context.Context, p *pgxpool.Pool, f func(*pgxpool.Conn) error) error {
	conn, err := p.Acquire(ctx)
	if err != nil {
		return lockclient.Failf("no connection: %v", err)
	}
	defer conn.Release()
	return f(conn)
}

// newHolder names one client in the lease table and in the server's log.
func newHolder() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "fencecheck-" + hex.EncodeToString(b)
}

// bigint is a fencing token as PostgreSQL's bigint.
func bigint(token uint64) (int64, error) {
	if token > math.MaxInt64 {
		return 0, lockclient.Failf("token %d does not fit a bigint", token)
	}
	return int64(token), nil
}

// noRows tells an empty result from an error.
func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
