// Command redislock is a fencecheck lock client over bsm/redislock, a
// published Go lock library for Redis, written the way a Go user would:
// implement lockclient.Client, call lockclient.Serve.
//
// redislock's lock value is a random string, not a number that grows, so
// there is no fencing token: acquire answers token 0 and the storage can
// refuse nothing. Under pause-holder fencecheck should find a stale write
// with --fencing none and with --fencing all alike.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/fencecheck/fencecheck/lockclient"
)

type client struct {
	rdb     *redis.Client
	locker  *redislock.Client
	ttl     time.Duration
	storage *lockclient.FencedStorage

	mu    sync.Mutex
	locks map[string]*held
}

// held is a lock and the goroutine that refreshes it every TTL/3, as a
// service that holds a lock for longer than its TTL must.
type held struct {
	lock *redislock.Lock
	stop chan struct{}
}

func (c *client) Open(ctx context.Context, init lockclient.Init) error {
	if len(init.Service.Endpoints) == 0 {
		return errors.New("no Redis endpoint in init")
	}
	opt, err := redis.ParseURL(init.Service.Endpoints[0])
	if err != nil {
		return fmt.Errorf("endpoint %q: %w", init.Service.Endpoints[0], err)
	}
	c.rdb = redis.NewClient(opt)
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", init.Service.Endpoints[0], err)
	}
	c.locker = redislock.New(c.rdb)
	c.ttl = time.Duration(init.LeaseTTLMs) * time.Millisecond
	c.storage = &lockclient.FencedStorage{URL: init.Storage.URL}
	c.locks = map[string]*held{}
	return nil
}

func (c *client) Acquire(ctx context.Context, key string) (uint64, error) {
	lock, err := c.locker.Obtain(ctx, "lock/"+key, c.ttl, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(20 * time.Millisecond),
	})
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return 0, lockclient.Fail(err) // someone else holds it: not taken
	case err != nil:
		return 0, err // the SET may have landed: unknown
	}
	h := &held{lock: lock, stop: make(chan struct{})}
	go func() {
		t := time.NewTicker(c.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), c.ttl/3)
				lock.Refresh(ctx, c.ttl, nil)
				cancel()
			}
		}
	}()
	c.mu.Lock()
	c.locks[key] = h
	c.mu.Unlock()
	return 0, nil // no fencing token: redislock's value is random
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
	// The last check that the lock is still ours.
	ttl, err := h.lock.TTL(ctx)
	if err != nil {
		return lockclient.Fail(fmt.Errorf("checking the lock: %w", err))
	}
	if ttl <= 0 {
		return lockclient.Failf("lock lost")
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
	err := h.lock.Release(ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return lockclient.Fail(err) // it had expired: nothing released
	}
	return err
}

func main() {
	if err := lockclient.Serve(os.Stdin, os.Stdout, &client{}); err != nil {
		fmt.Fprintln(os.Stderr, "redislock:", err)
		os.Exit(1)
	}
}
