package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

// LockRoot holds one persistent znode per key; the lock znodes are its
// ephemeral-sequential children, LockRoot/<key>/_c_<guid>-lock-<seq>.
const LockRoot = "/fencecheck/locks"

var acl = zk.WorldACL(zk.PermAll)

// held is one acquired lock. It is lost with its session.
type held struct {
	sess  *session
	path  string
	token uint64
}

func (h *held) Token() uint64 { return h.token }
func (h *held) Lost() bool    { return h.sess.lostWhy() != "" }

// Client is the ephemeral-sequential znode lock recipe, written out so
// that every step runs under the op's context: create a protected
// ephemeral-sequential znode under LockRoot/<key>, list the children, and
// either hold the lock (ours is the lowest) or watch the next lower znode
// and list again when it goes. The lease is the session: a frozen or cut
// off client's session expires and its znode disappears, handing the lock
// to the next in line. A client that sees its session expire or its
// connection drop refuses to send a read or write (ErrLeaseLost) — a check
// the tests show cannot prevent a stale write, because a pause can fall
// between the check and the write; only the storage's fencing can.
//
// The fencing token is the czxid of the holder's lock znode: the zxid of
// the transaction that created it. Zxids are assigned by the leader in
// one total order, are unique, and only grow — across leader changes too,
// since a new leader starts a higher epoch in the upper 32 bits — so a
// lock znode created later always has a larger czxid. The lock is granted
// in creation order (the lowest sequence number holds it, and sequence
// numbers under one parent are assigned in the same order as zxids), so
// successive holders of a key get increasing tokens, as fencing needs.
//
// The znode's own sequence number would also be sound for one lock path:
// the parent's counter orders its children exactly as their zxids do, and
// the storage compares tokens per key only. It is weaker in two ways the
// czxid is not: the counter is a signed 32-bit number that wraps, and it
// restarts when the parent znode is deleted and created again (LockRoot's
// children are persistent and never deleted here, so neither happens in a
// test run).
//
// Each acquire runs on the client's current session; a lost session means
// a new zk connection (a new session) for the next acquire.
type Client struct {
	servers      []string
	timing       Timing
	fenced.Guard // Read and Write, through the lease check
	sess         *session
	leases       backends.Leases[*held]
}

// NewClient makes a client of the ensemble at servers (host:port) with
// the session timeout TimingFor(ttl) gives, guarding storage. It connects
// on the first acquire, under that op's deadline.
func NewClient(servers []string, ttl time.Duration, storage fenced.Storage) (*Client, error) {
	if len(servers) == 0 {
		return nil, errors.New("zookeeper: no servers")
	}
	if storage == nil {
		return nil, errors.New("zookeeper: the resource lives in the shared fenced storage, and none was given")
	}
	c := &Client{servers: servers, timing: TimingFor(ttl)}
	c.Guard = fenced.Guard{Storage: storage, Check: c.leases.Check}
	return c, nil
}

// definiteErrs are answers in which a server refused a request, and
// errors raised before anything was sent: the request did not take effect.
var definiteErrs = []error{
	zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion, zk.ErrNotEmpty, zk.ErrNoChildrenForEphemerals,
	zk.ErrNoAuth, zk.ErrAuthFailed, zk.ErrInvalidACL, zk.ErrInvalidFlags, zk.ErrBadArguments,
	zk.ErrInvalidPath, zk.ErrNoServer,
}

// definite tells a go-zk error whose request certainly did not take
// effect (a refusal) from one whose effect is unknown: a lost connection
// (ErrConnectionClosed), an expiry noticed mid-request (ErrSessionExpired),
// a closing client or a timeout.
func definite(err error) bool {
	for _, d := range definiteErrs {
		if errors.Is(err, d) {
			return true
		}
	}
	return false
}

// call runs f, a blocking go-zk request (go-zk takes no context), and
// waits for it or for ctx. When ctx ends first, f goes on in the
// background and, if then is set, then gets its result.
func call[T any](ctx context.Context, f func() (T, error), then func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if then != nil {
			go func() {
				r := <-ch
				then(r.v, r.err)
			}()
		}
		var zero T
		return zero, ctx.Err()
	}
}

// timedOut tells the op's own deadline (or cancellation) from go-zk's
// errors: go-zk never returns a context's error, call does.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// session is the client's live session, or a new one.
func (c *Client) session(ctx context.Context) (*session, error) {
	if c.sess != nil && c.sess.lostWhy() == "" {
		return c.sess, nil
	}
	if c.sess != nil {
		go c.sess.close()
		c.sess = nil
	}
	s, err := dial(ctx, c.servers, c.timing.Session)
	if err != nil {
		return nil, err
	}
	c.sess = s
	return s, nil
}

// drop deletes a lock znode the client will not use (it gave up waiting
// for it), or ends its session when that fails: a znode left behind would
// block every other client until the session expires.
func drop(s *session, path string) {
	if path == "" {
		return
	}
	if err := s.conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		s.abandon("could not delete an abandoned lock znode")
	}
}

// createLockNode creates our protected ephemeral-sequential znode under
// parent, creating parent (persistent) the first time a key is used. The
// protected name's GUID lets go-zk find the znode again when the
// connection drops mid-create.
func createLockNode(conn *zk.Conn, parent string) (string, error) {
	path, err := conn.CreateProtectedEphemeralSequential(parent+"/lock-", nil, acl)
	if !errors.Is(err, zk.ErrNoNode) {
		return path, err
	}
	p := ""
	for _, part := range strings.Split(strings.TrimPrefix(parent, "/"), "/") {
		p += "/" + part
		if _, err := conn.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return "", err
		}
	}
	return conn.CreateProtectedEphemeralSequential(parent+"/lock-", nil, acl)
}

// sequence is a lock znode's sequence number; ok is false for a child
// that is not a lock znode.
func sequence(name string) (seq int64, ok bool) {
	i := strings.LastIndex(name, "lock-")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+len("lock-"):], 10, 64)
	return n, err == nil
}

// predecessor finds own among the lock znodes: whether it is there, and
// the name of the znode just below it ("" when own is the lowest).
func predecessor(children []string, own string) (pred string, found bool) {
	type child struct {
		name string
		seq  int64
	}
	var lock []child
	for _, ch := range children {
		if seq, ok := sequence(ch); ok {
			lock = append(lock, child{ch, seq})
		}
	}
	sort.Slice(lock, func(i, j int) bool { return lock[i].seq < lock[j].seq })
	for i, ch := range lock {
		if ch.name == own {
			if i == 0 {
				return "", true
			}
			return lock[i-1].name, true
		}
	}
	return "", false
}

func (c *Client) Acquire(ctx context.Context, key string) (uint64, error) {
	if err := c.leases.Free(key); err != nil {
		return 0, err
	}
	s, err := c.session(ctx)
	if err != nil {
		// Nothing was created: at most a session with no znode, closed.
		return 0, lockclient.Failf("lock not granted: %v", err)
	}
	parent := LockRoot + "/" + key
	path, err := call(ctx, func() (string, error) { return createLockNode(s.conn, parent) },
		func(path string, _ error) { drop(s, path) })
	switch {
	case err == nil:
	case timedOut(err):
		// The create goes on; drop deletes its znode if it happens.
		return 0, lockclient.Failf("lock not granted before the deadline: %v", err)
	case definite(err):
		return 0, lockclient.Fail(fmt.Errorf("creating the lock znode: %w", err))
	default:
		// The znode may exist, in a session this client now ends.
		s.abandon("connection lost while creating a lock znode")
		return 0, fmt.Errorf("creating the lock znode: %w", err)
	}
	return c.wait(ctx, s, key, parent, path)
}

// wait holds the lock once path is the lowest lock znode of parent,
// watching its predecessor until then. Past the create, no request it
// makes has an effect, and on every way out it deletes path or ends the
// session: when it gives up, the lock was certainly not granted.
func (c *Client) wait(ctx context.Context, s *session, key, parent, path string) (uint64, error) {
	notGranted := func(format string, args ...any) (uint64, error) {
		if why := s.lostWhy(); why != "" {
			go s.close()
			return 0, lockclient.Failf("lock not granted: session lost (%s): %s", why, fmt.Sprintf(format, args...))
		}
		go drop(s, path)
		return 0, lockclient.Failf("lock not granted: "+format, args...)
	}
	// failed ends the wait on a request's error. The op's own deadline
	// says nothing of the session, which is kept (notGranted drops our
	// znode); any other error from go-zk leaves the session in doubt, so
	// it is given up, and the znode goes with it.
	failed := func(abandonWhy, what string, err error) (uint64, error) {
		if !timedOut(err) {
			s.abandon(abandonWhy + ": " + err.Error())
		}
		return notGranted("%s: %v", what, err)
	}
	own := path[len(parent)+1:]
	st, err := call(ctx, func() (*zk.Stat, error) {
		_, st, err := s.conn.Get(path)
		return st, err
	}, nil)
	if err != nil {
		return failed("reading the lock znode", "reading our lock znode", err)
	}
	token := uint64(st.Czxid)
	for {
		children, err := call(ctx, func() ([]string, error) {
			ch, _, err := s.conn.Children(parent)
			return ch, err
		}, nil)
		if err != nil {
			return failed("listing the lock znodes", "listing the lock znodes", err)
		}
		pred, found := predecessor(children, own)
		if !found {
			s.abandon("lock znode gone")
			return notGranted("our lock znode %s is gone", own)
		}
		if pred == "" {
			break
		}
		watch, err := call(ctx, func() (<-chan zk.Event, error) {
			_, _, ch, err := s.conn.GetW(parent + "/" + pred)
			return ch, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue // the predecessor went between the listing and the watch
		}
		if err != nil {
			return failed("watching the predecessor", "watching the predecessor", err)
		}
		select {
		case <-watch:
		case <-s.lost:
			return notGranted("while waiting")
		case <-ctx.Done():
			return notGranted("the deadline came first (%v)", ctx.Err())
		}
	}
	if why := s.lostWhy(); why != "" {
		return notGranted("just as it became ours")
	}
	c.leases.Put(key, &held{sess: s, path: path, token: token})
	return token, nil
}

// Release deletes the lock znode. With the session lost it sends nothing
// and ends the session instead, which deletes the znode if the session
// still lives.
func (c *Client) Release(ctx context.Context, key string) error {
	h, err := c.leases.Take(key)
	if err != nil {
		return err
	}
	if h.Lost() {
		go h.sess.close()
		return lockclient.ErrLeaseLost
	}
	_, err = call(ctx, func() (struct{}, error) { return struct{}{}, h.sess.conn.Delete(h.path, -1) }, nil)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		// The znode went with the session: nothing left to release.
		h.sess.abandon("lock znode gone")
		return lockclient.Failf("release: %v (the session had ended)", err)
	case definite(err):
		return lockclient.Fail(fmt.Errorf("release: %w", err))
	default:
		// The delete may or may not have happened; ending the session
		// makes sure the lock goes.
		h.sess.abandon("release interrupted: " + err.Error())
		return fmt.Errorf("release: %w", err)
	}
}

// Close ends every session the client has; their znodes go with them.
func (c *Client) Close() error {
	sessions := map[*session]bool{}
	if c.sess != nil {
		sessions[c.sess] = true
	}
	for _, h := range c.leases.TakeAll() {
		sessions[h.sess] = true
	}
	c.sess = nil
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
	return nil
}
