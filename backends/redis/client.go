package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Backoff between tries at a busy lock: from minBackoff, doubling up to
// maxBackoff, each drawn at random from the upper half.
const (
	minBackoff = 2 * time.Millisecond
	maxBackoff = 50 * time.Millisecond
)

// lease is one held lock: its grant and what the recipe needs to renew
// and release it.
type lease struct {
	*backends.Grant
	value string
	maybe []bool // the masters that may hold value
	// validUntil is the end of the lease's validity after the last
	// renewal; only the keepalive touches it.
	validUntil time.Time
}

// Client is a Redis lock recipe and the fenced storage it guards. Once
// the lock is held a keepalive renews it every TTL/3 (the renew script
// checks the random value). The client refuses to touch the storage once
// the keepalive has learnt the lease is gone: a renewal found the value
// gone from too many masters, or renewals failed past the lease's
// validity. As in the memory backend, that check races with a write that
// is already on its way.
type Client struct {
	lock         *masters
	fenced.Guard // Read and Write, through the lease check
	ttl          time.Duration
	name         string // prefix of the random values, for reading the servers
	leases       backends.Leases[*lease]
}

// NewClient makes a client of the recipe over the masters at endpoints
// (redis://host:port), or over the master the Sentinels at endpoints name
// (redis-sentinel://host:port/<master name>). It dials lazily: a master
// that is down makes ops fail later, not the client.
func NewClient(endpoints []string, recipe string, ttl time.Duration, storage fenced.Storage) (*Client, error) {
	want, err := Servers(recipe)
	if err != nil {
		return nil, err
	}
	if len(endpoints) > 0 && strings.HasPrefix(endpoints[0], sentinelScheme) {
		return newFailoverClient(endpoints, recipe, ttl, storage)
	}
	if len(endpoints) != want {
		return nil, fmt.Errorf("recipe %s needs %s, got %s", recipe, words.Plural(want, "Redis endpoint"), endpointList(endpoints))
	}
	if storage == nil {
		return nil, fmt.Errorf("the Redis backend keeps no resource itself: it needs a shared storage")
	}
	var nodes []*goredis.Client
	var addrs []string
	for _, ep := range endpoints {
		opt, err := goredis.ParseURL(ep)
		if err != nil {
			for _, n := range nodes {
				n.Close()
			}
			return nil, fmt.Errorf("endpoint %s: %w", ep, err)
		}
		// Every request is sent once: a retry after a timeout could find
		// the key set by its own first try and call the lock busy. The
		// op's context bounds every request, not a socket timeout.
		opt.MaxRetries = -1
		opt.DialerRetries = 1
		opt.DialTimeout = max(ttl, time.Second)
		opt.ReadTimeout = -1
		opt.WriteTimeout = -1
		opt.ContextTimeoutEnabled = true
		opt.PoolSize = 8
		opt.Protocol = 2
		opt.DisableIdentity = true
		opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		nodes = append(nodes, goredis.NewClient(opt))
		addrs = append(addrs, opt.Addr)
	}
	return newClient(recipe, nodes, addrs, ttl, storage), nil
}

func newClient(recipe string, nodes []*goredis.Client, addrs []string, ttl time.Duration, storage fenced.Storage) *Client {
	host, _ := os.Hostname()
	c := &Client{lock: newMasters(recipe, nodes, addrs, ttl), ttl: ttl, name: host}
	c.Guard = fenced.Guard{Storage: storage, Check: c.leases.Check}
	return c
}

// sentinelScheme starts a Sentinel's endpoint.
const sentinelScheme = "redis-sentinel://"

// newFailoverClient is the client of the sentinel topology: go-redis's
// failover client, which asks the Sentinels (all at once, the first to
// answer wins and is kept) for the master's address whenever it dials,
// and listens on that Sentinel's +switch-master to drop its connections
// to a replaced master. Requests are sent once, as to a plain master.
func newFailoverClient(endpoints []string, recipe string, ttl time.Duration, storage fenced.Storage) (*Client, error) {
	var sentinels []string
	master := ""
	for _, ep := range endpoints {
		rest, ok := strings.CutPrefix(ep, sentinelScheme)
		host, name, _ := strings.Cut(rest, "/")
		if !ok || host == "" || name == "" || (master != "" && name != master) {
			return nil, fmt.Errorf("endpoint %s: a Sentinel is given as %shost:port/<master name>, the same name for every Sentinel", ep, sentinelScheme)
		}
		master = name
		sentinels = append(sentinels, host)
	}
	opt := &goredis.FailoverOptions{
		MasterName:    master,
		SentinelAddrs: sentinels,
		// As NewClient's: every request sent once, bounded by the op's
		// context.
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           max(ttl, time.Second),
		ReadTimeout:           -1,
		WriteTimeout:          -1,
		ContextTimeoutEnabled: true,
		PoolSize:              8,
		Protocol:              2,
		DisableIdentity:       true,
	}
	node := goredis.NewFailoverClient(opt)
	return newClient(recipe, []*goredis.Client{node}, []string{"master " + master + " (Sentinels " + strings.Join(sentinels, ", ") + ")"}, ttl, storage), nil
}

// newValue is a random value no other acquire will ever use.
func (c *Client) newValue() string {
	b := make([]byte, 12)
	rand.Read(b)
	if c.name == "" {
		return hex.EncodeToString(b)
	}
	return c.name + "-" + hex.EncodeToString(b)
}

// Acquire tries the lock until it is granted or ctx is about to end. A
// lock that stays busy (or masters that keep refusing) until then is a
// definite failure; a try whose outcome is unknown ends the op at once, as
// unknown. It stops trying a little before the deadline (a tenth of the
// time, at most 200 ms, as backends.ServerDeadline) so that its "not
// granted" reaches the harness before the harness gives up on it.
func (c *Client) Acquire(ctx context.Context, key string) (uint64, error) {
	if err := c.leases.Free(key); err != nil {
		return 0, err
	}
	giveUp := time.Now().Add(time.Hour)
	if dl, ok := ctx.Deadline(); ok {
		d := time.Until(dl)
		giveUp = dl.Add(-min(d/10, 200*time.Millisecond))
	}
	value := c.newValue()
	backoff := minBackoff
	why := "not tried"
	for {
		if ctx.Err() != nil || !time.Now().Before(giveUp) {
			return 0, lockclient.Failf("not granted before the op's deadline (last try: %s)", why)
		}
		a, err := c.lock.tryLock(ctx, key, value)
		if err != nil {
			return 0, err
		}
		if a.granted {
			c.hold(key, value, a)
			return a.token, nil
		}
		why = a.why
		wait := min(backoff/2+mrand.N(backoff/2+1), time.Until(giveUp))
		backoff = min(2*backoff, maxBackoff)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// hold starts the keepalive of a granted lock.
func (c *Client) hold(key, value string, a attempt) {
	l := &lease{Grant: backends.NewGrant(a.token), value: value, maybe: a.maybe, validUntil: a.validUntil}
	c.leases.Put(key, l)
	l.KeepAlive(c.ttl/3, func(stopped context.Context) bool { return c.renew(stopped, key, l) })
}

// renew extends the lease once, and says whether it is lost: the masters
// say the value is no longer ours, or no renewal succeeded within the
// lease's validity.
func (c *Client) renew(stopped context.Context, key string, l *lease) (lost bool) {
	rctx, cancel := context.WithTimeout(stopped, c.ttl)
	r := c.lock.extend(rctx, key, l.value)
	cancel()
	if r.renewed {
		l.validUntil = r.validUntil
		return false
	}
	return r.lost || time.Now().After(l.validUntil)
}

// Release stops the keepalive, then deletes the value wherever it is ours.
func (c *Client) Release(ctx context.Context, key string) error {
	l, err := c.leases.Take(key)
	if err != nil {
		return err
	}
	l.Stop()
	return c.lock.unlock(ctx, key, l.value, l.maybe)
}

// Close stops every keepalive and closes the connections; leases left
// behind expire on their own.
func (c *Client) Close() error {
	for _, l := range c.leases.TakeAll() {
		l.Abandon()
	}
	var errs []string
	for _, n := range c.lock.nodes {
		if err := n.Close(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("closing: %s", strings.Join(errs, "; "))
	}
	return nil
}

// endpointList names endpoints for a message: "none", or "a, b and c".
func endpointList(endpoints []string) string {
	if len(endpoints) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d: %s", len(endpoints), words.List(endpoints))
}
