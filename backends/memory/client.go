package memory

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Locks is the lease service as a client sees it: the in-process Service
// or the same service across the network (lockd).
type Locks interface {
	Acquire(ctx context.Context, key string) (uint64, error)
	Renew(ctx context.Context, key string, token uint64) error
	Release(ctx context.Context, key string, token uint64) error
}

// NetworkDelay is the one-way delay of every in-process call between a
// client and the lock service or the storage. In-process calls would
// otherwise be instantaneous, which no real client sees: in particular a
// client resuming from a pause learns that its lease is gone only a round
// trip after its keepalive asks, while a write it had ready goes out at
// once. With no delay that race becomes a coin toss that real systems do
// not play.
const NetworkDelay = 500 * time.Microsecond

// Client is the lease recipe: acquire, keep the lease alive every TTL/3,
// and refuse to touch the storage once the keepalive has learnt the lease
// is gone. That last check is what most lease-lock users rely on; the
// tests show it is not enough, because a pause can fall between the check
// and the write.
type Client struct {
	locks        Locks
	fenced.Guard // Read and Write, through the lease check
	ttl          time.Duration
	gate         *Gate
	delay        time.Duration
	leases       backends.Leases[*backends.Grant]
}

// NewClient makes a client of locks and storage whose whole activity stops
// while gate is frozen. A nil gate is never frozen.
func NewClient(locks Locks, storage fenced.Storage, ttl time.Duration, gate *Gate) *Client {
	if gate == nil {
		gate = &Gate{}
	}
	c := &Client{locks: locks, ttl: ttl, gate: gate}
	// Every op on the storage waits out a freeze, passes the lease check
	// and then crosses the network.
	c.Guard = fenced.Guard{Storage: delayed{c, storage}, Check: func(key string, token uint64) error {
		c.gate.Wait()
		return c.leases.Check(key, token)
	}}
	return c
}

// WithNetworkDelay makes every call to the service and the storage take d
// each way, for clients that share a process with their servers.
func (c *Client) WithNetworkDelay(d time.Duration) *Client {
	c.delay = d
	return c
}

// send is the way out of the process: it stops while the client is frozen,
// then spends the one-way delay.
func (c *Client) send() {
	c.gate.Wait()
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
}

// receive is the way back in: the delay, then the freezer.
func (c *Client) receive() {
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	c.gate.Wait()
}

// Gate is the client's freezer.
func (c *Client) Gate() *Gate { return c.gate }

func (c *Client) Acquire(ctx context.Context, key string) (uint64, error) {
	c.send()
	token, err := c.locks.Acquire(ctx, key)
	c.receive()
	if err != nil {
		return 0, err
	}
	g := backends.NewGrant(token)
	c.leases.Put(key, g)
	g.KeepAlive(c.ttl/3, func(context.Context) (lost bool) {
		c.send()
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl)
		err := c.locks.Renew(ctx, key, token)
		cancel()
		c.receive()
		return err == ErrNotHolder
	})
	return token, nil
}

// delayed is the storage across the client's network: each op leaves
// through send and comes back through receive.
type delayed struct {
	c       *Client
	storage fenced.Storage
}

func (d delayed) Read(ctx context.Context, key string, token uint64) (int64, error) {
	d.c.send()
	v, err := d.storage.Read(ctx, key, token)
	d.c.receive()
	return v, err
}

func (d delayed) ReadLockFree(ctx context.Context, key string) (int64, error) {
	d.c.send()
	v, err := d.storage.ReadLockFree(ctx, key)
	d.c.receive()
	return v, err
}

func (d delayed) Write(ctx context.Context, key string, token uint64, value int64) error {
	d.c.send()
	err := d.storage.Write(ctx, key, token, value)
	d.c.receive()
	return err
}

func (c *Client) Release(ctx context.Context, key string) error {
	c.gate.Wait()
	g, err := c.leases.Take(key)
	if err != nil {
		return err
	}
	g.Stop()
	c.send()
	err = c.locks.Release(ctx, key, g.Token())
	c.receive()
	if err == ErrNotHolder {
		return lockclient.Fail(err)
	}
	return err
}

// Close stops every keepalive; leases left behind expire on their own.
func (c *Client) Close() error {
	for _, g := range c.leases.TakeAll() {
		g.Abandon()
	}
	return nil
}
