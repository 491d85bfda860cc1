// Command client-go is a fencecheck lock client over client-go's leader
// election (k8s.io/client-go/tools/leaderelection with a Lease lock),
// written the way a Kubernetes operator elects its leader: implement
// lockclient.Client, call lockclient.Serve.
//
// The lock is made as controller-runtime's manager makes its own
// (resourcelock.NewFromKubeconfig with LeasesResourceLock) from the API
// server's URL, bearer token and certificate in init. Acquire is
// OnStartedLeading; the fencing token is the Lease's leaseTransitions + 1,
// taken from a read of the Lease that names this elector as its holder;
// the last lease check before a write is the elector's IsLeader(); release
// cancels the elector with ReleaseOnCancel. client-go promises no fencing:
// under pause-holder fencecheck should find two leaders with --fencing
// none, and the late writes refused with --fencing all.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fencecheck/fencecheck/lockclient"
)

// namespace holds the Leases, "lock-<key>" each.
const namespace = "default"

// leaseName is what a Lease may be called: a DNS subdomain name.
var leaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,200}[a-z0-9])?$`)

type client struct {
	config   *rest.Config
	storage  *lockclient.FencedStorage
	identity string // this process's; each election adds a number
	leaseDur time.Duration
	renew    time.Duration
	retry    time.Duration

	mu      sync.Mutex
	n       int
	leaders map[string]*leader
}

// leader is one running election that this process won.
type leader struct {
	identity string
	lock     resourcelock.Interface
	elector  *leaderelection.LeaderElector
	cancel   context.CancelFunc
	done     chan struct{} // closed when the elector's Run returned
	stopped  chan struct{} // closed by OnStoppedLeading
}

func (c *client) Open(ctx context.Context, init lockclient.Init) error {
	s := init.Service
	// With --apiservers 3 init names three API servers and ca holds their
	// three certificates; a rest.Config speaks to one: the first.
	if len(s.Endpoints) == 0 || s.BearerToken == "" || s.CA == "" {
		return errors.New("init names no API server URL, bearer token and certificate (service.endpoints, bearer_token, ca): run with --backend kubernetes")
	}
	for _, k := range init.Keys {
		if !leaseName.MatchString("lock-" + k) {
			return fmt.Errorf("key %q does not make a Lease name (lock-%s): a Lease name is lowercase letters, digits, '-' and '.'", k, k)
		}
	}
	c.config = &rest.Config{
		Host:            s.Endpoints[0],
		BearerToken:     s.BearerToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(s.CA)},
		// client-go's default of 5 requests/s is less than an election
		// retrying every RetryPeriod of a short lease needs.
		QPS: 50, Burst: 100,
	}
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return err
	}
	if _, err := cs.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("listing Leases on %s: %w", s.Endpoints[0], err)
	}
	// client-go's documented defaults are 15 s / 10 s / 2 s; the run's
	// lease keeps those proportions.
	ttl := time.Duration(init.LeaseTTLMs) * time.Millisecond
	c.leaseDur, c.renew, c.retry = ttl, ttl*10/15, ttl*2/15
	c.identity = fmt.Sprintf("%s-p%d", init.Node, init.Process)
	c.storage = &lockclient.FencedStorage{URL: init.Storage.URL}
	c.leaders = map[string]*leader{}
	return nil
}

func (c *client) Acquire(ctx context.Context, key string) (uint64, error) {
	c.mu.Lock()
	c.n++
	l := &leader{identity: fmt.Sprintf("%s-%d", c.identity, c.n), done: make(chan struct{}), stopped: make(chan struct{})}
	c.mu.Unlock()
	var err error
	l.lock, err = resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, namespace, "lock-"+key,
		resourcelock.ResourceLockConfig{Identity: l.identity}, c.config, c.renew)
	if err != nil {
		return 0, lockclient.Fail(err)
	}
	started := make(chan struct{})
	l.elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            l.lock,
		LeaseDuration:   c.leaseDur,
		RenewDeadline:   c.renew,
		RetryPeriod:     c.retry,
		ReleaseOnCancel: true,
		Name:            "lock-" + key,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() { close(l.stopped) },
		},
	})
	if err != nil {
		return 0, lockclient.Fail(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		l.elector.Run(runCtx)
	}()
	select {
	case <-started:
	case <-ctx.Done():
		cancel()
		select {
		case <-started: // won just now; whether the release landed is unknown
			return 0, fmt.Errorf("elected as the deadline passed: %w", ctx.Err())
		default:
			return 0, lockclient.Failf("not elected before the deadline")
		}
	}
	token, err := l.token(ctx)
	if err != nil {
		cancel()
		return 0, err
	}
	c.mu.Lock()
	c.leaders[key] = l
	c.mu.Unlock()
	return token, nil
}

// token reads the Lease through the lock and returns leaseTransitions + 1
// (a Lease's creator has 0), but only from a read that names this elector
// as the holder: a later term's number is not this term's token.
func (l *leader) token(ctx context.Context) (uint64, error) {
	rec, _, err := l.lock.Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("elected, but the Lease could not be read: %w", err)
	}
	if rec.HolderIdentity != l.identity {
		return 0, lockclient.Failf("elected, but the Lease already names %q as its holder", rec.HolderIdentity)
	}
	return uint64(rec.LeaderTransitions) + 1, nil
}

// leading is the check an operator makes before it acts: the elector has
// not given up and still believes it leads.
func (c *client) leading(key string) error {
	c.mu.Lock()
	l := c.leaders[key]
	c.mu.Unlock()
	if l == nil {
		return lockclient.Failf("not leading %s", key)
	}
	select {
	case <-l.stopped:
		return lockclient.Failf("stopped leading %s", key)
	default:
	}
	if !l.elector.IsLeader() {
		return lockclient.Failf("no longer the leader of %s", key)
	}
	return nil
}

func (c *client) Read(ctx context.Context, key string, token uint64) (int64, error) {
	if err := c.leading(key); err != nil {
		return 0, err
	}
	return c.storage.Read(ctx, key, token)
}

func (c *client) Write(ctx context.Context, key string, token uint64, prev, value int64, checkpoint func(string)) error {
	if err := c.leading(key); err != nil {
		return err
	}
	checkpoint(lockclient.FailpointWriteChecked)
	return c.storage.Write(ctx, key, token, value)
}

// Release cancels the election; with ReleaseOnCancel client-go writes the
// Lease free if it still leads. client-go tries that once, within one
// RenewDeadline (⅔ of the lease), and only logs a failure: under a slow
// API server the Lease stays held until it expires. So while the Lease
// still names this elector, Release writes it free itself, the way
// client-go does (holder "", a 1 s lease), in an update conditional on the
// read that named it, until the op's deadline. A Lease that still names
// this elector then was not released.
func (c *client) Release(ctx context.Context, key string) error {
	c.mu.Lock()
	l, ok := c.leaders[key]
	delete(c.leaders, key)
	c.mu.Unlock()
	if !ok {
		return lockclient.Failf("not leading %s", key)
	}
	if err := l.stop(ctx); err != nil {
		return err
	}
	var last error
	for {
		rec, _, err := l.lock.Get(ctx)
		switch {
		case err != nil:
			last = fmt.Errorf("released, but the Lease could not be read back: %w", err)
		case rec.HolderIdentity != l.identity:
			return nil
		default:
			now := metav1.NewTime(time.Now())
			free := resourcelock.LeaderElectionRecord{
				LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1,
				AcquireTime: now, RenewTime: now,
			}
			// Get gave the lock this read's resourceVersion: the update
			// fails with a conflict if anyone wrote the Lease since.
			err := l.lock.Update(ctx, free)
			if err == nil {
				return nil
			}
			last = fmt.Errorf("the Lease still names %s as its holder (%v)", l.identity, err)
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(c.retry):
		}
	}
}

// stop cancels the election and waits for client-go's Run to return,
// its release written or given up.
func (l *leader) stop(ctx context.Context) error {
	l.cancel()
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the elector had not stopped by the deadline: %w", ctx.Err())
	}
}

func main() {
	if err := lockclient.Serve(os.Stdin, os.Stdout, &client{}); err != nil {
		fmt.Fprintln(os.Stderr, "client-go:", err)
		os.Exit(1)
	}
}
