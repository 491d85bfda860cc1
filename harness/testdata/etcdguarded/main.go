// Command etcd-guarded is a test client for --storage etcd: etcd's
// concurrency.Mutex for the lock, the lock key's create revision as the
// token, and the value at storage.prefix+key written in a transaction
// guarded by the lock (If the lock key still has our create revision, Then
// put): the program's own fence check, which fencecheck judges. Known
// answer under pause-holder: valid. Not an example to copy.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencecheck/fencecheck/lockclient"
)

type held struct {
	session *concurrency.Session
	mutex   *concurrency.Mutex
}

type client struct {
	cli    *clientv3.Client
	ttl    int
	prefix string

	mu   sync.Mutex
	held map[string]*held
}

func (c *client) Open(ctx context.Context, init lockclient.Init) error {
	if init.Storage.Backend != "etcd" || init.Storage.Prefix == "" {
		return errors.New("this client keeps the value in etcd itself: run it with --backend etcd --storage etcd")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: init.Storage.Endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	c.cli, c.prefix, c.held = cli, init.Storage.Prefix, map[string]*held{}
	c.ttl = max(2, int((time.Duration(init.LeaseTTLMs)*time.Millisecond+time.Second-1)/time.Second))
	return nil
}

func (c *client) Acquire(ctx context.Context, key string) (uint64, error) {
	s, err := concurrency.NewSession(c.cli, concurrency.WithTTL(c.ttl), concurrency.WithContext(context.Background()))
	if err != nil {
		return 0, err
	}
	m := concurrency.NewMutex(s, "/etcd-guarded/locks/"+key)
	if err := m.Lock(ctx); err != nil {
		s.Close() // revokes the lease, and our queued key with it
		return 0, err
	}
	resp, err := c.cli.Get(ctx, m.Key())
	if err != nil || len(resp.Kvs) == 0 {
		s.Close()
		return 0, fmt.Errorf("reading our lock key: %v", err)
	}
	c.mu.Lock()
	c.held[key] = &held{session: s, mutex: m}
	c.mu.Unlock()
	return uint64(resp.Kvs[0].CreateRevision), nil
}

func (c *client) lock(key string) (*held, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.held[key]
	if h == nil {
		return nil, lockclient.Failf("not holding %s", key)
	}
	select {
	case <-h.session.Done():
		return nil, lockclient.ErrLeaseLost
	default:
	}
	return h, nil
}

func (c *client) Read(ctx context.Context, key string, _ uint64) (int64, error) {
	h, err := c.lock(key)
	if err != nil {
		return 0, err
	}
	resp, err := c.cli.Txn(ctx).If(h.mutex.IsOwner()).Then(clientv3.OpGet(c.prefix + key)).Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, lockclient.ErrLeaseLost
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, nil
	}
	return strconv.ParseInt(string(kvs[0].Value), 10, 64)
}

func (c *client) Write(ctx context.Context, key string, _ uint64, _, value int64, checkpoint func(string)) error {
	h, err := c.lock(key)
	if err != nil {
		return err
	}
	checkpoint(lockclient.FailpointWriteChecked)
	// The fence: the put happens only if our lock key still exists with
	// the create revision we were granted.
	resp, err := c.cli.Txn(ctx).If(h.mutex.IsOwner()).Then(clientv3.OpPut(c.prefix+key, strconv.FormatInt(value, 10))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return lockclient.ErrFenced
	}
	return nil
}

func (c *client) Release(ctx context.Context, key string) error {
	c.mu.Lock()
	h := c.held[key]
	delete(c.held, key)
	c.mu.Unlock()
	if h == nil {
		return lockclient.Failf("not holding %s", key)
	}
	defer h.session.Close()
	select {
	case <-h.session.Done():
		return lockclient.ErrLeaseLost
	default:
	}
	return h.mutex.Unlock(ctx)
}

func main() {
	if err := lockclient.Serve(os.Stdin, os.Stdout, &client{}); err != nil {
		fmt.Fprintln(os.Stderr, "etcd-guarded:", err)
		os.Exit(1)
	}
}
