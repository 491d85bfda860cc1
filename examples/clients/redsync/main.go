// Command redsync is a fencecheck lock client over go-redsync/redsync, the
// Go reference implementation of Redlock, written the way a Go user
// would: implement lockclient.Client, call lockclient.Serve.
//
// It takes every Redis master fencecheck started (run it with --nodes 5
// for Redlock's five) and leaves redsync's own settings alone: expiry =
// the run's lease TTL, per-master timeout 5 % of it, drift 1 %, a random
// 50–250 ms between tries. Its lock value is random, so there is no
// fencing token: acquire answers token 0 and the storage can refuse
// nothing.
package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	"github.com/fencecheck/fencecheck/lockclient"
)

type client struct {
	rs      *redsync.Redsync
	ttl     time.Duration
	storage *lockclient.FencedStorage

	mu    sync.Mutex
	locks map[string]*held
}

// held is a lock and the goroutine that extends it every TTL/3, as a
// service that holds a lock longer than its TTL must. A redsync Mutex is
// not safe for concurrent use, so mu serializes the calls on it.
type held struct {
	mu    sync.Mutex
	m     *redsync.Mutex
	lost  bool
	stop  chan struct{}
	ended chan struct{}
}

func (c *client) Open(ctx context.Context, init lockclient.Init) error {
	if len(init.Service.Endpoints) == 0 {
		return errors.New("no Redis endpoint in init")
	}
	var pools []redsyncredis.Pool
	for _, ep := range init.Service.Endpoints {
		opt, err := goredislib.ParseURL(ep)
		if err != nil {
			return fmt.Errorf("endpoint %q: %w", ep, err)
		}
		// Every request is bounded by the context redsync gives it (its
		// per-master timeout), not by a socket timeout.
		opt.ContextTimeoutEnabled = true
		rdb := goredislib.NewClient(opt)
		if err := rdb.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis %s: %w", ep, err)
		}
		pools = append(pools, goredis.NewPool(rdb))
	}
	c.rs = redsync.New(pools...)
	c.ttl = time.Duration(init.LeaseTTLMs) * time.Millisecond
	c.storage = &lockclient.FencedStorage{URL: init.Storage.URL}
	c.locks = map[string]*held{}
	return nil
}

// Acquire tries until the lock is granted or shortly before the op's
// deadline, so that its "not granted" arrives in time. Every failed try is
// released by redsync on every master, so a failure is definite.
func (c *client) Acquire(ctx context.Context, key string) (uint64, error) {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-min(time.Until(dl)/10, 200*time.Millisecond)))
		defer cancel()
	}
	m := c.rs.NewMutex("lock/"+key, redsync.WithExpiry(c.ttl), redsync.WithTries(math.MaxInt32))
	if err := m.LockContext(ctx); err != nil {
		return 0, lockclient.Fail(err)
	}
	h := &held{m: m, stop: make(chan struct{}), ended: make(chan struct{})}
	go c.keepAlive(h)
	c.mu.Lock()
	c.locks[key] = h
	c.mu.Unlock()
	return 0, nil // no fencing token: redsync's value is random
}

// keepAlive extends the lock every TTL/3; a failed extension marks it
// lost, which the next write's check sees.
func (c *client) keepAlive(h *held) {
	defer close(h.ended)
	t := time.NewTicker(c.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), c.ttl/3)
			h.mu.Lock()
			if ok, _ := h.m.ExtendContext(ctx); !ok {
				h.lost = true
			}
			h.mu.Unlock()
			cancel()
		}
	}
}

func (c *client) Read(ctx context.Context, key string, token uint64) (int64, error) {
	return c.storage.Read(ctx, key, token)
}

func (c *client) Write(ctx context.Context, key string, token uint64, prev, value int64, checkpoint func(string)) error {
	c.mu.Lock()
	h := c.locks[key]
	c.mu.Unlock()
	if h == nil {
		return lockclient.Failf("not holding %s", key)
	}
	// The last check that the lock is still ours: redsync's validity time
	// (Until), as Redlock defines it, and no failed extension since.
	h.mu.Lock()
	lost, until := h.lost, h.m.Until()
	h.mu.Unlock()
	if lost || !time.Now().Before(until) {
		return lockclient.Failf("lock lost (valid until %s)", until.Format(time.StampMilli))
	}
	checkpoint(lockclient.FailpointWriteChecked)
	return c.storage.Write(ctx, key, token, value)
}

func (c *client) Release(ctx context.Context, key string) error {
	c.mu.Lock()
	h := c.locks[key]
	delete(c.locks, key)
	c.mu.Unlock()
	if h == nil {
		return lockclient.Failf("not holding %s", key)
	}
	close(h.stop)
	<-h.ended
	ok, err := h.m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case err == nil || errors.Is(err, redsync.ErrLockAlreadyExpired):
		return lockclient.Failf("not released on a majority: the lock had expired")
	}
	return err
}

func main() {
	if err := lockclient.Serve(os.Stdin, os.Stdout, &client{}); err != nil {
		fmt.Fprintln(os.Stderr, "redsync:", err)
		os.Exit(1)
	}
}
