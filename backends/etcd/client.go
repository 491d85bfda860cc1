package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// LockPrefix and DataPrefix are where the locks and (with --storage etcd)
// the resources live.
const (
	LockPrefix = "/fencecheck/locks/"
	DataPrefix = "/fencecheck/data/"
)

// Recipes are etcd's two lock recipes: the client-side concurrency.Mutex
// and the server-side Lock RPC (the v3lock service behind `etcdctl lock`).
var Recipes = []string{"mutex", "lock-rpc"}

// held is one acquired lock: its session (the lease, kept alive by this
// client), the lock key and its create revision (the token).
type held struct {
	session *concurrency.Session
	mutex   *concurrency.Mutex // the mutex recipe; nil for lock-rpc
	key     string             // the lock key that exists while the lock is held
	token   uint64
}

func (h *held) Token() uint64 { return h.token }

// errKeyVanished is the careful client's refusal of a grant whose lock key
// was already gone at the read-back (the lease expired while it waited).
const errKeyVanished = "the lock key vanished: session expired"

// Lost: the session's lease has ended (expired or revoked) as far as the
// client knows.
func (h *held) Lost() bool {
	select {
	case <-h.session.Done():
		return true
	default:
		return false
	}
}

// owner is the guard of a transaction that must run only while this lock
// is held: its key still exists and still has the create revision it got.
// "Still exists" is spelt out: a key that is gone has create revision 0,
// which is the token a trusting client (--lease-check none) got for a
// grant whose key was already gone, so "= token" alone would pass there.
func (h *held) owner() []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(h.key), ">", 0),
		clientv3.Compare(clientv3.CreateRevision(h.key), "=", int64(h.token)),
	}
}

// Client runs either recipe. Each acquire opens a concurrency.Session (a
// lease kept alive by the client) and then, with the mutex recipe, locks
// a concurrency.Mutex; with lock-rpc it asks the server's Lock RPC to lock
// the name with that lease, and the server does the waiting. Either way the
// token is the create revision of the holder's lock key. With a fenced
// storage node the client refuses to send a read or write once the
// session is known lost; with storage etcd every read and write is a
// transaction guarded by the lock's ownership.
type Client struct {
	cli          *clientv3.Client
	rpc          bool // the Lock RPC recipe
	ttl          int
	fenced.Guard // to the storage node, or to the resource in etcd
	leases       backends.Leases[*held]
	// trust: --lease-check none. A grant whose lock key is already gone
	// is acted on (token 0) instead of failing the acquisition.
	trust bool
}

// TrustGrants makes the client trust its grants, as Jepsen's etcd client
// did: the read-back of the lock key only learns the token (0 when the key
// is already gone) and fails nothing, and the guard checks no lease
// before a read or a write.
func (c *Client) TrustGrants() {
	c.trust = true
	c.Guard.TrustGrants()
}

// NewRecipeClient connects to every endpoint with recipe (one of Recipes).
// storage nil means --storage etcd.
func NewRecipeClient(endpoints []string, recipe string, ttl time.Duration, storage fenced.Storage) (*Client, error) {
	if recipe != "mutex" && recipe != "lock-rpc" {
		return nil, fmt.Errorf("etcd has no recipe %q (accepted: %s)", recipe, strings.Join(Recipes, ", "))
	}
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
	c := &Client{cli: cli, rpc: recipe == "lock-rpc", ttl: secs}
	if storage == nil {
		storage = inEtcd{c}
	}
	c.Guard = fenced.Guard{Storage: storage, Check: c.leases.Check}
	return c, nil
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
		return lockclient.Fail(err)
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.InvalidArgument, codes.FailedPrecondition, codes.PermissionDenied, codes.NotFound, codes.OutOfRange:
			return lockclient.Fail(err)
		}
	}
	return err
}

func (c *Client) Acquire(ctx context.Context, key string) (uint64, error) {
	if err := c.leases.Free(key); err != nil {
		return 0, err
	}
	// Grant the lease under the op's deadline; the session then keeps it
	// alive on a context of its own, for as long as the lock is held.
	lease, err := c.cli.Grant(ctx, int64(c.ttl))
	if err != nil {
		// No lease, or one nobody will use and that expires: no lock.
		return 0, lockclient.Failf("no lease: %v", err)
	}
	s, err := concurrency.NewSession(c.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(c.ttl),
		concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return 0, lockclient.Failf("no session: %v", err)
	}
	var (
		m       *concurrency.Mutex
		lockKey string
	)
	if c.rpc {
		lockKey, err = lockRPC(ctx, c.cli, LockPrefix+key, lease.ID)
	} else {
		m = concurrency.NewMutex(s, LockPrefix+key)
		err = m.Lock(ctx)
		lockKey = m.Key()
		if c.trust && errors.Is(err, concurrency.ErrSessionExpired) {
			// The mutex's own read-back after its wait found the key
			// gone with the lease: its turn came on an expired lease.
			// A trusting client acts on that turn (token 0, below).
			err = nil
		}
	}
	if err != nil {
		// The mutex cleans its waiter key up when it gives up, and the
		// server's Lock does the same when the call is cancelled; closing
		// the session revokes the lease in any case (or it expires,
		// unrenewed): the lock was not granted.
		go s.Close()
		return 0, lockclient.Failf("lock not granted: %v", err)
	}
	// The token: the lock key's create revision. Header().Revision is
	// not that number on the waiting path.
	resp, err := c.cli.Get(ctx, lockKey)
	if err == nil && len(resp.Kvs) == 0 && c.trust {
		// The server granted the lock on a lease that has already
		// expired (its key went with the lease). A trusting client acts
		// on the grant all the same, with the create revision of a key
		// that does not exist: 0, below every real token.
		h := &held{session: s, mutex: m, key: lockKey}
		c.leases.Put(key, h)
		return 0, nil
	}
	if err != nil || len(resp.Kvs) == 0 {
		// We hold the lock but cannot say with which token: unknown.
		go s.Close()
		if err == nil {
			err = errors.New(errKeyVanished)
			return 0, lockclient.Fail(err)
		}
		return 0, fmt.Errorf("reading the lock key's revision: %w", err)
	}
	h := &held{session: s, mutex: m, key: lockKey, token: uint64(resp.Kvs[0].CreateRevision)}
	c.leases.Put(key, h)
	return h.token, nil
}

// errGuard is a transaction whose lock guard failed: the lock is no longer
// ours, and etcd did not apply the op.
var errGuard = lockclient.Failf(history.ErrGuardFailed)

// inEtcd is the resource kept in etcd itself (--storage etcd): every read
// and write is a transaction guarded by the lock's ownership. The client's
// guard has checked the lease before an op gets here.
type inEtcd struct{ c *Client }

// owner is the guard of key's transactions: the lock held with token. It
// does not check the lease again: after the guard's check (and the
// failpoint) the transaction goes out, and etcd judges it.
func (s inEtcd) owner(key string, token uint64) ([]clientv3.Cmp, error) {
	h, ok := s.c.leases.Get(key)
	if !ok || h.token != token {
		return nil, lockclient.ErrLeaseLost
	}
	return h.owner(), nil
}

func (s inEtcd) Read(ctx context.Context, key string, token uint64) (int64, error) {
	owner, err := s.owner(key, token)
	if err != nil {
		return 0, err
	}
	resp, err := s.c.cli.Txn(ctx).If(owner...).Then(clientv3.OpGet(DataPrefix + key)).Commit()
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
		return 0, lockclient.Failf("malformed value %q", kvs[0].Value)
	}
	return v, nil
}

// ReadLockFree reads the value without the lock: a plain linearizable Get,
// no guard, since the reader holds nothing to be guarded by.
func (s inEtcd) ReadLockFree(ctx context.Context, key string) (int64, error) {
	resp, err := s.c.cli.Get(ctx, DataPrefix+key)
	if err != nil {
		return 0, outcome(err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	var v int64
	if _, err := fmt.Sscan(string(resp.Kvs[0].Value), &v); err != nil {
		return 0, lockclient.Failf("malformed value %q", resp.Kvs[0].Value)
	}
	return v, nil
}

func (s inEtcd) Write(ctx context.Context, key string, token uint64, value int64) error {
	owner, err := s.owner(key, token)
	if err != nil {
		return err
	}
	resp, err := s.c.cli.Txn(ctx).If(owner...).Then(clientv3.OpPut(DataPrefix+key, fmt.Sprint(value))).Commit()
	if err != nil {
		return outcome(err)
	}
	if !resp.Succeeded {
		return errGuard
	}
	return nil
}

// Release unlocks (the mutex deletes its key; lock-rpc asks the server's
// Unlock RPC to), then closes the session (revoking its lease).
func (c *Client) Release(ctx context.Context, key string) error {
	h, err := c.leases.Take(key)
	if err != nil {
		return err
	}
	if c.rpc {
		err = unlockRPC(ctx, c.cli, h.key)
	} else {
		err = h.mutex.Unlock(ctx)
	}
	go h.session.Close()
	return outcome(err)
}

func (c *Client) Close() error {
	for _, h := range c.leases.TakeAll() {
		h.session.Orphan()
	}
	return c.cli.Close()
}
