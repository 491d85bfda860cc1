package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
)

// LockPrefix and DataPrefix are where the locks and (with --storage etcd)
// the resources live.
const (
	LockPrefix = "/fencecheck/locks/"
	DataPrefix = "/fencecheck/data/"
)

// held is one acquired lock: its session (lease) and mutex.
type held struct {
	session *concurrency.Session
	mutex   *concurrency.Mutex
	token   uint64
}

// Client is the mutex recipe: each acquire opens a concurrency.Session
// (a lease kept alive by the client) and locks a concurrency.Mutex; the
// token is the create revision of the holder's lock key. With a fenced
// storage node the client refuses to send a read or write once the
// session is known lost; with storage etcd every read and write is a
// transaction guarded by the lock's ownership.
type Client struct {
	cli     *clientv3.Client
	ttl     int
	storage fenced.Storage // nil: the resource lives in etcd
	held    map[string]*held
}

// NewClient connects to every endpoint. storage nil means --storage etcd.
func NewClient(endpoints []string, ttl time.Duration, storage fenced.Storage) (*Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, err
	}
	secs, _ := TTLSeconds(ttl)
	return &Client{cli: cli, ttl: secs, storage: storage, held: map[string]*held{}}, nil
}

// outcome classifies an etcd error: an answer from the server that says
// the request was refused is definite; a timeout, a cancelled context or a
// broken connection leaves the outcome unknown.
func outcome(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		switch ee.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown:
			return err
		}
		return backends.Definite(err)
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.InvalidArgument, codes.FailedPrecondition, codes.PermissionDenied, codes.NotFound, codes.OutOfRange:
			return backends.Definite(err)
		}
	}
	return err
}

func (c *Client) Acquire(ctx context.Context, key string) (uint64, error) {
	if h := c.held[key]; h != nil {
		return 0, backends.Definitef("already holding %s", key)
	}
	// Grant the lease under the op's deadline; the session then keeps it
	// alive on a context of its own, for as long as the lock is held.
	lease, err := c.cli.Grant(ctx, int64(c.ttl))
	if err != nil {
		// No lease, or one nobody will use and that expires: no lock.
		return 0, backends.Definitef("no lease: %v", err)
	}
	s, err := concurrency.NewSession(c.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(c.ttl),
		concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return 0, backends.Definitef("no session: %v", err)
	}
	m := concurrency.NewMutex(s, LockPrefix+key)
	if err := m.Lock(ctx); err != nil {
		// Lock cleans its waiter key up when it gives up; closing the
		// session revokes the lease in any case: the lock was not granted.
		go s.Close()
		return 0, backends.Definitef("lock not granted: %v", err)
	}
	// The token: the lock key's create revision. Header().Revision is
	// not that number on the waiting path.
	resp, err := c.cli.Get(ctx, m.Key())
	if err != nil || len(resp.Kvs) == 0 {
		// We hold the lock but cannot say with which token: unknown.
		go s.Close()
		if err == nil {
			err = errors.New("the lock key vanished: session expired")
			return 0, backends.Definite(err)
		}
		return 0, fmt.Errorf("reading the lock key's revision: %w", err)
	}
	h := &held{session: s, mutex: m, token: uint64(resp.Kvs[0].CreateRevision)}
	c.held[key] = h
	return h.token, nil
}

// current is the lock on key with token, if the client still believes it
// holds it.
func (c *Client) current(key string, token uint64) (*held, error) {
	h := c.held[key]
	if h == nil || h.token != token {
		return nil, backends.ErrLeaseLost
	}
	select {
	case <-h.session.Done():
		return nil, backends.ErrLeaseLost
	default:
	}
	return h, nil
}

// errGuard is a transaction whose lock guard failed: the lock is no longer
// ours, and etcd did not apply the op.
var errGuard = backends.Definitef("guard-failed")

func (c *Client) Read(ctx context.Context, key string, token uint64) (int64, error) {
	h, err := c.current(key, token)
	if err != nil {
		return 0, err
	}
	if c.storage != nil {
		return c.storage.Read(ctx, key, token)
	}
	resp, err := c.cli.Txn(ctx).If(h.mutex.IsOwner()).Then(clientv3.OpGet(DataPrefix + key)).Commit()
	if err != nil {
		return 0, outcome(err)
	}
	if !resp.Succeeded {
		return 0, errGuard
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, nil
	}
	var v int64
	if _, err := fmt.Sscan(string(kvs[0].Value), &v); err != nil {
		return 0, backends.Definitef("malformed value %q", kvs[0].Value)
	}
	return v, nil
}

func (c *Client) Write(ctx context.Context, key string, token uint64, _, value int64) error {
	h, err := c.current(key, token)
	if err != nil {
		return err
	}
	backends.Failpoint(ctx, backends.FailpointWriteChecked)
	if c.storage != nil {
		return c.storage.Write(ctx, key, token, value)
	}
	resp, err := c.cli.Txn(ctx).If(h.mutex.IsOwner()).Then(clientv3.OpPut(DataPrefix+key, fmt.Sprint(value))).Commit()
	if err != nil {
		return outcome(err)
	}
	if !resp.Succeeded {
		return errGuard
	}
	return nil
}

// Release unlocks, then closes the session (revoking its lease).
func (c *Client) Release(ctx context.Context, key string) error {
	h := c.held[key]
	if h == nil {
		return backends.Definitef("release of %s without holding it", key)
	}
	delete(c.held, key)
	err := h.mutex.Unlock(ctx)
	go h.session.Close()
	return outcome(err)
}

func (c *Client) Close() error {
	for k, h := range c.held {
		h.session.Orphan()
		delete(c.held, k)
	}
	return c.cli.Close()
}
