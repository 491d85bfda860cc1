package memory

import (
	"context"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
)

// Locks is the lease service as a client sees it: the in-process Service
// or the same service across the network (lockd).
type Locks interface {
	Acquire(ctx context.Context, key string) (uint64, error)
	Renew(ctx context.Context, key string, token uint64) error
	Release(ctx context.Context, key string, token uint64) error
}

// lease is one held lock and its keepalive.
type lease struct {
	token uint64
	mu    sync.Mutex
	lost  bool
	stop  chan struct{}
	done  chan struct{}
}

func (l *lease) isLost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
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
	locks   Locks
	storage fenced.Storage
	ttl     time.Duration
	gate    *Gate
	delay   time.Duration

	mu   sync.Mutex
	held map[string]*lease
}

// NewClient makes a client of locks and storage whose whole activity stops
// while gate is frozen. A nil gate is never frozen.
func NewClient(locks Locks, storage fenced.Storage, ttl time.Duration, gate *Gate) *Client {
	if gate == nil {
		gate = &Gate{}
	}
	return &Client{locks: locks, storage: storage, ttl: ttl, gate: gate, held: map[string]*lease{}}
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
	l := &lease{token: token, stop: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.held[key] = l
	c.mu.Unlock()
	go c.keepalive(key, l)
	return token, nil
}

func (c *Client) keepalive(key string, l *lease) {
	defer close(l.done)
	t := time.NewTicker(c.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		c.send()
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl)
		err := c.locks.Renew(ctx, key, l.token)
		cancel()
		c.receive()
		if err == ErrNotHolder {
			l.mu.Lock()
			l.lost = true
			l.mu.Unlock()
			return
		}
	}
}

func (c *Client) current(key string, token uint64) error {
	c.mu.Lock()
	l := c.held[key]
	c.mu.Unlock()
	if l == nil || l.token != token || l.isLost() {
		return backends.ErrLeaseLost
	}
	return nil
}

func (c *Client) Read(ctx context.Context, key string, token uint64) (int64, error) {
	c.gate.Wait()
	if err := c.current(key, token); err != nil {
		return 0, err
	}
	c.send()
	v, err := c.storage.Read(ctx, key, token)
	c.receive()
	return v, err
}

func (c *Client) Write(ctx context.Context, key string, token uint64, _, value int64) error {
	c.gate.Wait()
	if err := c.current(key, token); err != nil {
		return err
	}
	backends.Failpoint(ctx, backends.FailpointWriteChecked)
	c.send()
	err := c.storage.Write(ctx, key, token, value)
	c.receive()
	return err
}

func (c *Client) Release(ctx context.Context, key string) error {
	c.gate.Wait()
	c.mu.Lock()
	l := c.held[key]
	delete(c.held, key)
	c.mu.Unlock()
	if l == nil {
		return backends.Definitef("release of %s without holding it", key)
	}
	close(l.stop)
	<-l.done
	c.send()
	err := c.locks.Release(ctx, key, l.token)
	c.receive()
	if err == ErrNotHolder {
		return backends.Definite(err)
	}
	return err
}

// Close stops every keepalive; leases left behind expire on their own.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, l := range c.held {
		close(l.stop)
		delete(c.held, k)
	}
	return nil
}
