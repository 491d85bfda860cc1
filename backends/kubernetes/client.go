package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Recipes is the backend's one recipe: client-go's leader election.
var Recipes = []string{"leaderelection"}

// Namespace holds the Leases, one per key (LeaseName).
const Namespace = "default"

// Timing is client-go's three leader-election durations.
type Timing struct {
	// LeaseDuration is how long a candidate waits, on its own monotonic
	// clock, after last seeing the Lease change before it takes the
	// Lease over.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying a renewal
	// before it gives up leading.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between two tries (to acquire, to renew).
	RetryPeriod time.Duration
}

// TimingFor derives the durations from --lease-ttl in client-go's
// documented proportions, 15 s / 10 s / 2 s: LeaseDuration is the ttl,
// RenewDeadline two thirds of it, RetryPeriod two fifteenths (rounded
// down to the millisecond).
func TimingFor(ttl time.Duration) Timing {
	ms := func(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }
	return Timing{LeaseDuration: ttl, RenewDeadline: ms(ttl * 10 / 15), RetryPeriod: ms(ttl * 2 / 15)}
}

func (t Timing) String() string {
	return fmt.Sprintf("client-go tools/leaderelection, LeaseLock, ReleaseOnCancel; LeaseDuration %s, RenewDeadline %s, RetryPeriod %s (15/10/2 of --lease-ttl); client rate limit %.0f/s, burst %d",
		t.LeaseDuration, t.RenewDeadline, t.RetryPeriod, defaultQPS*rateScale(t), int(defaultBurst*rateScale(t)))
}

// MinTTL is the shortest --lease-ttl: below it RetryPeriod would be
// shorter than a round trip to the API server under load, and client-go
// would spend the lease retrying.
const MinTTL = time.Second

// client-go's default client-side rate limit (rest.Config QPS and Burst
// left zero), at its default RetryPeriod of 2 s.
const (
	defaultQPS         = 5
	defaultBurst       = 10
	defaultRetryPeriod = 2 * time.Second
)

// rateScale is how many times more often than at client-go's defaults
// the timing retries (at least 1).
func rateScale(t Timing) float64 {
	return max(1, float64(defaultRetryPeriod)/float64(t.RetryPeriod))
}

// LeaseName is the Lease that key's election runs on: a DNS subdomain
// name, which a key need not be.
func LeaseName(key string) string {
	var b strings.Builder
	b.WriteString("fencecheck-")
	for _, r := range strings.ToLower(key) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "-%x-", r)
		}
	}
	return strings.TrimRight(b.String(), "-.")
}

// held is one won election: the elector that runs it until cancelled,
// and the token read back from the Lease.
type held struct {
	identity string
	elector  *leaderelection.LeaderElector
	cancel   context.CancelFunc
	done     chan struct{} // closed when the elector's Run has returned
	stopped  atomic.Bool   // OnStoppedLeading was called
	token    uint64
}

func (h *held) Token() uint64 { return h.token }

// Lost is client-go's own judgement: the elector stopped leading, or the
// Lease it last observed names another holder. Like every leader built
// on client-go, it learns of a takeover only at its next renewal.
func (h *held) Lost() bool { return h.stopped.Load() || !h.elector.IsLeader() }

// Client is one process's leader election: for each acquire, a fresh
// identity and a client-go LeaderElector on the key's Lease, run until
// the release cancels it (ReleaseOnCancel writes the Lease free).
type Client struct {
	fenced.Guard
	// cs is the coordination.k8s.io/v1 client alone: the whole clientset
	// would double the agent binary that every container carries.
	cs      coordinationv1.CoordinationV1Interface
	timing  Timing
	process int
	run     string // random, so identities of two clients never collide
	seq     atomic.Uint64
	leases  backends.Leases[*held]
	closing sync.Once
}

// NewClient makes a client of the API server at endpoint, with the
// token and certificate of secret (ClientSpec.ServiceSecret).
func NewClient(endpoint, secret string, process int, ttl time.Duration, storage fenced.Storage) (*Client, error) {
	if storage == nil {
		return nil, errors.New("kubernetes: the resource lives in the shared storage, and none was given")
	}
	var sec clientSecret
	if err := json.Unmarshal([]byte(secret), &sec); err != nil || sec.Token == "" || sec.CA == "" {
		return nil, errors.New("kubernetes: the client spec carries no API server token and certificate (service_secret)")
	}
	t := TimingFor(ttl)
	cfg := &rest.Config{
		Host:            endpoint,
		BearerToken:     sec.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(sec.CA)},
		// No request outlives a renewal's deadline: a cut-off leader's
		// calls end, as client-go's own contexts would end them.
		Timeout:   t.RenewDeadline,
		UserAgent: "fencecheck-leaderelection",
		// client-go's default client-side rate (5 requests/s, bursts of
		// 10) scaled as the durations are: a lease shorter than 15 s
		// retries and renews more often, and the limiter must not be
		// what makes a leader miss its renewals.
		QPS:   float32(defaultQPS * rateScale(t)),
		Burst: int(defaultBurst * rateScale(t)),
	}
	cs, err := coordinationv1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, err
	}
	c := &Client{cs: cs, timing: t, process: process, run: hex.EncodeToString(r[:])}
	c.Guard = fenced.Guard{Storage: storage, Check: c.leases.Check}
	return c, nil
}

// Acquire runs client-go's election on key's Lease until it leads
// (OnStartedLeading), then reads the Lease back: the token is its
// spec.leaseTransitions + 1, taken only from a read that shows this
// acquire's identity as the holder. client-go raises leaseTransitions by
// one each time the Lease changes hands (an Update conditional on the
// resourceVersion it read), and each acquire has an identity of its own,
// so successive holders of a key get strictly increasing tokens; the + 1
// keeps the Lease's creator (leaseTransitions 0) off token 0.
func (c *Client) Acquire(ctx context.Context, key string) (uint64, error) {
	if err := c.leases.Free(key); err != nil {
		return 0, err
	}
	h := &held{identity: fmt.Sprintf("p%d-%s-%d", c.process, c.run, c.seq.Add(1)), done: make(chan struct{})}
	name := LeaseName(key)
	started := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: Namespace, Name: name},
			Client:     c.cs,
			LockConfig: resourcelock.ResourceLockConfig{Identity: h.identity},
		},
		LeaseDuration:   c.timing.LeaseDuration,
		RenewDeadline:   c.timing.RenewDeadline,
		RetryPeriod:     c.timing.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() { h.stopped.Store(true) },
		},
	})
	if err != nil {
		return 0, lockclient.Failf("lock not granted: %v", err)
	}
	h.elector = elector
	runCtx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		elector.Run(runCtx)
	}()
	select {
	case <-started:
	case <-ctx.Done():
		cancel()
		select {
		case <-started:
			// Won as the deadline passed: it releases (ReleaseOnCancel),
			// but whether that write landed is not known here.
			return 0, fmt.Errorf("lock granted as the op's deadline passed, then given up: %w", ctx.Err())
		default:
		}
		return 0, lockclient.Failf("lock not granted before the deadline: %v", ctx.Err())
	}
	lease, err := c.cs.Leases(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		cancel()
		return 0, fmt.Errorf("led, but the Lease could not be read back for its token (given up): %w", err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder != h.identity {
		// Someone else holds it already: this client never acts on it.
		cancel()
		return 0, lockclient.Failf("led, but the Lease read back names %q as its holder, not %q: lost before its token was read", holder, h.identity)
	}
	transitions := int32(0)
	if lease.Spec.LeaseTransitions != nil {
		transitions = *lease.Spec.LeaseTransitions
	}
	h.token = uint64(transitions) + 1
	c.leases.Put(key, h)
	return h.token, nil
}

// Release cancels the election: client-go's ReleaseOnCancel writes the
// Lease free (an empty holder) if this client still leads. The Lease is
// then read back: still naming this client, the release did not land.
func (c *Client) Release(ctx context.Context, key string) error {
	h, err := c.leases.Take(key)
	if err != nil {
		return err
	}
	h.cancel()
	select {
	case <-h.done:
	case <-ctx.Done():
		return fmt.Errorf("release: client-go's elector had not stopped by the deadline: %w", ctx.Err())
	}
	lease, err := c.cs.Leases(Namespace).Get(ctx, LeaseName(key), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("release: the Lease could not be read back: %w", err)
	case lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == h.identity:
		return fmt.Errorf("release: the Lease still names %s as its holder (client-go's release write did not land)", h.identity)
	}
	return nil
}

// Close cancels every election this client runs and waits a moment for
// client-go to write the Leases free.
func (c *Client) Close() error {
	c.closing.Do(func() {
		hs := c.leases.TakeAll()
		for _, h := range hs {
			h.cancel()
		}
		deadline := time.After(c.timing.RenewDeadline)
		for _, h := range hs {
			select {
			case <-h.done:
			case <-deadline:
				return
			}
		}
	})
	return nil
}
