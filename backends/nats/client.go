package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Recipes is the backend's one recipe: the key-value bucket's
// Create/Update/Delete.
var Recipes = []string{"kv"}

// Backoff between tries at a busy lock, as the Redis recipes back off.
const (
	minBackoff = 2 * time.Millisecond
	maxBackoff = 50 * time.Millisecond
)

// lease is one held lock: its grant, the random value its key holds and
// the key's last revision, which the keepalive moves on.
type lease struct {
	*backends.Grant
	value string

	mu sync.Mutex
	// revision is the key's revision after the last Create or Update of
	// ours that the server acknowledged.
	revision uint64
	// validUntil is when the lease ends at the latest, counted from the
	// sending of the last acknowledged Create or Update.
	validUntil time.Time
	// failed: a renewal failed, whatever the reason.
	failed bool
}

// Lost: the careful client stops acting once a renewal has failed or the
// lease's validity has run out, whether or not the keepalive has looked
// since.
func (l *lease) Lost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed || !time.Now().Before(l.validUntil) || l.Grant.Lost()
}

func (l *lease) last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.revision
}

// Client takes locks in the bucket with nats.go's jetstream KeyValue:
// Create is the acquire (it succeeds only when the key is absent, and its
// revision is the token), the bucket's TTL is the lease, Update with the
// last revision renews it every TTL/3, and Delete with the last revision
// releases it. Reads and writes go to the shared storage through the
// guard, which refuses them once the lease is lost (Lost).
type Client struct {
	nc           *nats.Conn
	js           jetstream.JetStream
	fenced.Guard // Read and Write, through the lease check
	ttl          time.Duration
	name         string
	leases       backends.Leases[*lease]

	mu sync.Mutex
	kv jetstream.KeyValue // bound on first use
}

// NewClient connects to the servers at endpoints (nats://host:port), and
// to no other. The connection is the one a user of the lock would open: it
// reconnects on its own, but never buffers a publish while it is
// disconnected (such a publish would leave at an unknown time), so one
// that cannot be sent fails at once.
func NewClient(ctx context.Context, endpoints []string, recipe string, ttl time.Duration, process int, storage fenced.Storage) (*Client, error) {
	if recipe != Recipes[0] {
		return nil, fmt.Errorf("nats has no recipe %q (accepted: %s)", recipe, strings.Join(Recipes, ", "))
	}
	if storage == nil {
		return nil, errors.New("the nats backend keeps no resource itself: it needs a shared storage")
	}
	if len(endpoints) == 0 {
		return nil, errors.New("no nats endpoints")
	}
	name := fmt.Sprintf("fencecheck-p%d", process)
	nc, err := nats.Connect(strings.Join(endpoints, ","),
		nats.Name(name),
		nats.Timeout(max(ttl, time.Second)),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond),
		nats.ReconnectBufSize(-1),
		// The servers it is given are all it speaks to: with
		// --client-endpoints one, a client bound to a frozen server
		// hangs with it, as Jepsen's did, rather than move to one the
		// cluster gossiped.
		nats.IgnoreDiscoveredServers(),
		nats.PingInterval(max(ttl/2, time.Second)),
		nats.MaxPingsOutstanding(2),
	)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := &Client{nc: nc, js: js, ttl: ttl, name: name}
	c.Guard = fenced.Guard{Storage: storage, Check: c.leases.Check}
	return c, nil
}

// bucket binds the bucket once (a stream info request): a bind that
// fails changed nothing, a definite failure.
func (c *Client) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kv != nil {
		return c.kv, nil
	}
	kv, err := c.js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, lockclient.Failf("binding the bucket %s: %v", Bucket, err)
	}
	c.kv = kv
	return kv, nil
}

// busy: the server refused a conditional write because the key's last
// revision was not the one expected (Create: the key exists).
func busy(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var api *jetstream.APIError
	return errors.As(err, &api) &&
		(api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// outcome classifies an error of a write to the bucket. The stream
// leader's answer that it refused the write (a JetStream API error: wrong
// last sequence, no such stream, …) is definite: nothing was stored. So
// is a write that never left (no server had interest in the subject, or
// the connection was down and nothing is buffered). A timeout, a
// cancelled context or a connection lost after the send leaves the
// outcome unknown: the stream may have stored it.
func outcome(err error) error {
	if err == nil {
		return nil
	}
	var api *jetstream.APIError
	switch {
	case errors.As(err, &api),
		errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, nats.ErrInvalidConnection),
		errors.Is(err, jetstream.ErrInvalidKey):
		return lockclient.Fail(err)
	}
	return err
}

func (c *Client) newValue() string {
	b := make([]byte, 12)
	rand.Read(b)
	return c.name + "-" + hex.EncodeToString(b)
}

// Acquire tries Create until it succeeds or the op's deadline is near: a
// key that stays there until then (another holder, or one whose lease has
// not yet run out) is a definite failure; a Create whose outcome is
// unknown ends the op at once, as unknown. It gives up a little before the
// deadline, as the Redis recipes do, so its "not granted" arrives in time.
func (c *Client) Acquire(ctx context.Context, key string) (uint64, error) {
	if err := c.leases.Free(key); err != nil {
		return 0, err
	}
	kv, err := c.bucket(ctx)
	if err != nil {
		return 0, err
	}
	giveUp := time.Now().Add(time.Hour)
	if dl, ok := ctx.Deadline(); ok {
		giveUp = dl.Add(-min(time.Until(dl)/10, 200*time.Millisecond))
	}
	value := c.newValue()
	backoff := minBackoff
	why := "not tried"
	for {
		if ctx.Err() != nil || !time.Now().Before(giveUp) {
			return 0, lockclient.Failf("not granted before the op's deadline (last try: %s)", why)
		}
		sent := time.Now()
		rev, err := kv.Create(ctx, key, []byte(value))
		switch {
		case err == nil:
			c.hold(key, value, rev, sent)
			return rev, nil
		case busy(err):
			why = "the key exists"
		default:
			if typ, _ := lockclient.Outcome(outcome(err)); typ != lockclient.TypeFail {
				return 0, fmt.Errorf("create of %s: %w", key, err)
			}
			why = err.Error() // refused or never sent: nothing was stored, try again
		}
		wait := min(backoff/2+mrand.N(backoff/2+1), time.Until(giveUp))
		backoff = min(2*backoff, maxBackoff)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// hold starts the keepalive of a granted lock: Update with the last
// revision every TTL/3.
func (c *Client) hold(key, value string, rev uint64, sent time.Time) {
	l := &lease{Grant: backends.NewGrant(rev), value: value, revision: rev, validUntil: sent.Add(c.ttl)}
	c.leases.Put(key, l)
	l.KeepAlive(c.ttl/3, func(stopped context.Context) bool { return c.renew(stopped, key, l) })
}

// renew updates the key once with the last revision. A renewal that
// fails, whatever the reason, ends the careful client's acting on the
// lock (lease.Lost); the keepalive stops once the lease is known gone.
func (c *Client) renew(stopped context.Context, key string, l *lease) (lost bool) {
	kv, err := c.bucket(stopped)
	if err != nil {
		l.mu.Lock()
		l.failed = true
		l.mu.Unlock()
		return true
	}
	rctx, cancel := context.WithTimeout(stopped, c.ttl/3)
	defer cancel()
	sent := time.Now()
	rev, err := kv.Update(rctx, key, []byte(l.value), l.last())
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed = true
		return true
	}
	l.revision = rev
	l.validUntil = sent.Add(c.ttl)
	return false
}

// Release stops the keepalive, then deletes the key if its last revision
// is still ours. A refusal (another revision: the lease ran out and the
// key was taken or changed) is definite: nothing was deleted.
func (c *Client) Release(ctx context.Context, key string) error {
	l, err := c.leases.Take(key)
	if err != nil {
		return err
	}
	l.Stop()
	kv, err := c.bucket(ctx)
	if err != nil {
		return err
	}
	return outcome(kv.Delete(ctx, key, jetstream.LastRevision(l.last())))
}

// Close stops every keepalive and closes the connection; locks left
// behind expire with the bucket's TTL.
func (c *Client) Close() error {
	for _, l := range c.leases.TakeAll() {
		l.Abandon()
	}
	c.nc.Close()
	return nil
}
