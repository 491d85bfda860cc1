// Command nats-kv is a fencecheck lock client over a NATS JetStream
// key-value bucket, with the official Go client (nats.go's jetstream
// package), written the way a Go user would: implement lockclient.Client,
// call lockclient.Serve.
//
// The lock is the bucket's key: Create takes it only when it is absent,
// Update with the last revision renews it every TTL/3 (the bucket's TTL
// is the lease), Delete with the last revision releases it, and the
// revision Create returned is the fencing token. fencecheck makes the
// bucket, "fencecheck", with the lease as its TTL and a replica on every
// server; the client binds to it by name.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fencecheck/fencecheck/lockclient"
)

// bucket is the bucket fencecheck makes for --backend nats.
const bucket = "fencecheck"

type client struct {
	nc      *nats.Conn
	kv      jetstream.KeyValue
	ttl     time.Duration
	name    string
	storage *lockclient.FencedStorage

	mu    sync.Mutex
	locks map[string]*held
}

// held is a lock, its last revision and the goroutine that renews it.
type held struct {
	mu       sync.Mutex
	revision uint64
	lost     bool // a renewal failed: the lock may be gone
	stop     chan struct{}
}

func (c *client) Open(ctx context.Context, init lockclient.Init) error {
	if len(init.Service.Endpoints) == 0 {
		return errors.New("no NATS endpoint in init")
	}
	nc, err := nats.Connect(strings.Join(init.Service.Endpoints, ","), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		return fmt.Errorf("nats %v: %w", init.Service.Endpoints, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if c.kv, err = js.KeyValue(ctx, bucket); err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	c.nc = nc
	c.ttl = time.Duration(init.LeaseTTLMs) * time.Millisecond
	c.name = fmt.Sprintf("%s-p%d", init.Node, init.Process)
	c.storage = &lockclient.FencedStorage{URL: init.Storage.URL}
	c.locks = map[string]*held{}
	return nil
}

// refused: the stream answered that it did not store the write.
func refused(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

func (c *client) Acquire(ctx context.Context, key string) (uint64, error) {
	for {
		rev, err := c.kv.Create(ctx, key, []byte(c.name))
		switch {
		case err == nil:
			c.hold(key, rev)
			return rev, nil
		case errors.Is(err, jetstream.ErrKeyExists):
			// Held by someone else: wait and try again.
		case refused(err):
			return 0, lockclient.Fail(err)
		default:
			return 0, err // a timeout: the key may be ours
		}
		select {
		case <-ctx.Done():
			return 0, lockclient.Fail(fmt.Errorf("not granted: %w", ctx.Err()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *client) hold(key string, rev uint64) {
	h := &held{revision: rev, stop: make(chan struct{})}
	go func() {
		t := time.NewTicker(c.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.ttl/3)
			h.mu.Lock()
			rev, err := c.kv.Update(ctx, key, []byte(c.name), h.revision)
			if err != nil {
				h.lost = true
			} else {
				h.revision = rev
			}
			h.mu.Unlock()
			cancel()
			if err != nil {
				return
			}
		}
	}()
	c.mu.Lock()
	c.locks[key] = h
	c.mu.Unlock()
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
	// The last check that the lock is still ours: no renewal has failed.
	h.mu.Lock()
	lost := h.lost
	h.mu.Unlock()
	if lost {
		return lockclient.Failf("lock lost: a renewal failed")
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
	h.mu.Lock()
	rev := h.revision
	h.mu.Unlock()
	err := c.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	if err != nil && refused(err) {
		return lockclient.Fail(err) // not at our revision any more: nothing deleted
	}
	return err
}

func main() {
	if err := lockclient.Serve(os.Stdin, os.Stdout, &client{}); err != nil {
		fmt.Fprintln(os.Stderr, "nats-kv:", err)
		os.Exit(1)
	}
}
