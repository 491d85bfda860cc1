// Package election is the kubernetes backend's built-in client: each
// acquire runs client-go's own tools/leaderelection with a LeaseLock on a
// coordination.k8s.io/v1 Lease, and the token is the Lease's
// spec.leaseTransitions as the winner read it back. Only the agent program
// check-kubernetes (cmd/check-kubernetes) imports it, so client-go is
// linked into that program and not into the check binary.
//
// It must never re-implement the election: acquire, renew, expiry and
// release are client-go's code, and this package only watches its
// callbacks and reads the Lease. It must never be imported by the check
// binary (cmd/check's TestCheckBinaryLinksNoKubernetesPackage).
package election

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
	"github.com/fencecheck/fencecheck/backends/kubernetes/clientconf"
	"github.com/fencecheck/fencecheck/lockclient"
)

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
	timing  clientconf.Timing
	process int
	run     string // random, so identities of two clients never collide
	seq     atomic.Uint64
	leases  backends.Leases[*held]
	closing sync.Once
}

// Open is the backend's client opener (registry.ClientOpener): a client
// of the API server the spec's process speaks to (clientconf.APIServerFor).
func Open(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
	endpoint, err := clientconf.APIServerFor(spec.Endpoints, spec.Process)
	if err != nil {
		return nil, err
	}
	return NewClient(endpoint, spec.ServiceSecret, spec.Process, spec.LeaseTTL, storage)
}

// NewClient makes a client of the API server at endpoint, with the
// token and certificate of secret (ClientSpec.ServiceSecret).
func NewClient(endpoint, secret string, process int, ttl time.Duration, storage fenced.Storage) (*Client, error) {
	if storage == nil {
		return nil, errors.New("kubernetes: the resource lives in the shared storage, and none was given")
	}
	sec, err := clientconf.ParseSecret(secret)
	if err != nil {
		return nil, err
	}
	t := clientconf.TimingFor(ttl)
	cfg := &rest.Config{
		Host:            endpoint,
		BearerToken:     sec.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(sec.CA)},
		// No request outlives a renewal's deadline: a cut-off leader's
		// calls end, as client-go's own contexts would end them.
		Timeout:   t.RenewDeadline,
		UserAgent: "fencecheck-leaderelection",
		// client-go's default client-side rate scaled as the durations
		// are (clientconf.Timing.QPS).
		QPS:   float32(t.QPS()),
		Burst: t.Burst(),
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
	name := clientconf.LeaseName(key)
	started := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: clientconf.Namespace, Name: name},
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
	lease, err := c.cs.Leases(clientconf.Namespace).Get(ctx, name, metav1.GetOptions{})
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
	lease, err := c.cs.Leases(clientconf.Namespace).Get(ctx, clientconf.LeaseName(key), metav1.GetOptions{})
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
