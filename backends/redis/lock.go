package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Key names in Redis. The braces keep a lock and its counter in one hash
// slot, should anyone point this at a cluster.
func lockKey(key string) string  { return "fencecheck:lock:{" + key + "}" }
func tokenKey(key string) string { return "fencecheck:token:{" + key + "}" }

// acquireIncr is setnx-incr's acquire: SET NX PX and, only when that set
// the key, INCR the key's counter — one script, so no other client can
// take the lock between the two. 0 means the lock is busy (INCR starts at
// 1).
var acquireIncr = goredis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0`)

// renew extends the lock's expiry if it still holds our random value.
var renew = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// release deletes the lock if it still holds our random value.
var release = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

// answer is what one master said to one request.
type answer int

const (
	no      answer = iota // it answered: not done (busy, not ours), or refused (definite)
	yes                   // it answered: done
	unknown               // no answer: it may have been done
	// unreplicated: done, but too few replicas acknowledged it in time
	// (setnx-incr-wait's WAIT), so the recipe does not count it: it must be
	// undone like a yes.
	unreplicated
)

// nodeOutcome classifies one master's error: an error reply is the server
// refusing the command, a connection never made sent nothing; a timeout or
// a connection lost after sending leaves the outcome unknown.
func nodeOutcome(err error) answer {
	if err == nil {
		return yes
	}
	var re goredis.Error
	switch {
	case errors.As(err, &re),
		backends.NeverSent(err),
		// The failover client found no Sentinel to name the master: it
		// never dialled one, so nothing was sent.
		strings.Contains(err.Error(), "all sentinels specified in configuration are unreachable"),
		errors.Is(err, goredis.ErrPoolTimeout),
		errors.Is(err, goredis.ErrClosed):
		return no
	}
	return unknown
}

// masters is a lock over independent Redis masters with a quorum: one
// master and quorum one for the setnx recipes, five and three for
// Redlock. The setnx recipes are the one-master case of the same steps.
type masters struct {
	nodes  []*goredis.Client
	addrs  []string
	quorum int
	tokens bool // setnx-incr: the acquire script returns a token
	ttl    time.Duration
	// drift is Redlock's clock drift allowance: 1% of the TTL plus 2 ms.
	drift time.Duration
	// nodeTimeout bounds each request to one master (Redlock: small next
	// to the TTL, so a dead master does not eat the lease); 0: the op's
	// own deadline.
	nodeTimeout time.Duration
	// waitReplicas, when above 0, is setnx-incr-wait's WAIT after a grant:
	// that many replicas must acknowledge it within waitTimeout.
	waitReplicas int
	waitTimeout  time.Duration
}

func newMasters(recipe string, nodes []*goredis.Client, addrs []string, ttl time.Duration) *masters {
	m := &masters{nodes: nodes, addrs: addrs, quorum: len(nodes)/2 + 1, tokens: recipe == SetNXIncr || recipe == SetNXIncrWait, ttl: ttl,
		drift: ttl/100 + 2*time.Millisecond}
	if recipe == SetNXIncrWait {
		m.waitReplicas, m.waitTimeout = 1, max(ttl/4, time.Millisecond)
	}
	if recipe == Redlock {
		m.nodeTimeout = max(ttl/10, 5*time.Millisecond)
	}
	return m
}

// onEach runs f on every master at once, each under its own deadline.
func (m *masters) onEach(ctx context.Context, f func(ctx context.Context, i int) (answer, error)) ([]answer, []error) {
	answers := make([]answer, len(m.nodes))
	errs := make([]error, len(m.nodes))
	var wg sync.WaitGroup
	for i := range m.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := ctx, context.CancelFunc(func() {})
			if m.nodeTimeout > 0 {
				nctx, cancel = context.WithTimeout(ctx, m.nodeTimeout)
			}
			defer cancel()
			answers[i], errs[i] = f(nctx, i)
		}()
	}
	wg.Wait()
	return answers, errs
}

// describe names each master's error, for messages.
func (m *masters) describe(errs []error) string {
	var out []string
	for i, err := range errs {
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", m.addrs[i], err))
		}
	}
	return strings.Join(out, "; ")
}

// attempt is one try at the lock.
type attempt struct {
	granted    bool
	token      uint64
	validUntil time.Time
	// maybe marks the masters that may hold our value (set, or no answer).
	maybe []bool
	// why the lock was not granted: busy, or the masters' errors.
	why string
}

// tryLock is one round of Redlock: set the value on every master, and
// hold the lock if a quorum set it with validity left. Otherwise it
// releases on every master. The error is nil unless the outcome is
// unknown: masters that may hold our value still make a quorum.
func (m *masters) tryLock(ctx context.Context, key, value string) (attempt, error) {
	start := time.Now()
	var tokenMu sync.Mutex
	var token uint64
	answers, errs := m.onEach(ctx, func(ctx context.Context, i int) (answer, error) {
		if m.tokens {
			var node goredis.Scripter = m.nodes[i]
			if m.waitReplicas > 0 {
				// WAIT counts the replicas that have this connection's
				// writes: the acquire and the WAIT go on one connection.
				conn := m.nodes[i].Conn()
				defer conn.Close()
				node = conn
			}
			t, err := acquireIncr.Run(ctx, node, []string{lockKey(key), tokenKey(key)}, value, m.ttl.Milliseconds()).Uint64()
			if err != nil {
				return nodeOutcome(err), err
			}
			if t == 0 {
				return no, nil
			}
			if m.waitReplicas > 0 {
				// Set for certain but not known to be on enough replicas:
				// not ours, and released below.
				n, err := node.(*goredis.Conn).Wait(ctx, m.waitReplicas, m.waitTimeout).Result()
				if err != nil {
					return unreplicated, fmt.Errorf("WAIT after the grant: %w", err)
				}
				if n < int64(m.waitReplicas) {
					return unreplicated, fmt.Errorf("WAIT: %d of %d replicas acknowledged the grant within %s", n, m.waitReplicas, m.waitTimeout)
				}
			}
			tokenMu.Lock()
			token = t
			tokenMu.Unlock()
			return yes, nil
		}
		ok, err := m.nodes[i].SetNX(ctx, lockKey(key), value, m.ttl).Result()
		if err != nil {
			return nodeOutcome(err), err
		}
		if !ok {
			return no, nil
		}
		return yes, nil
	})
	a := attempt{maybe: make([]bool, len(m.nodes))}
	set := 0
	for i, ans := range answers {
		a.maybe[i] = ans != no
		if ans == yes {
			set++
		}
	}
	validity := m.ttl - time.Since(start) - m.drift
	if set >= m.quorum && validity > 0 {
		a.granted, a.token, a.validUntil = true, token, start.Add(m.ttl-m.drift)
		return a, nil
	}
	a.why = "busy"
	if d := m.describe(errs); d != "" {
		a.why = d
	} else if set >= m.quorum {
		a.why = fmt.Sprintf("granted too late: no validity left after %s", time.Since(start).Round(time.Millisecond))
	}
	// Not ours: free the masters we may have set. A master whose set went
	// unanswered may still apply it after this release (it may come in on
	// another connection), so it stays among the maybe.
	rel, relErrs := m.onEach(context.WithoutCancel(ctx), func(ctx context.Context, i int) (answer, error) {
		if !a.maybe[i] {
			return yes, nil
		}
		err := release.Run(ctx, m.nodes[i], []string{lockKey(key)}, value).Err()
		return nodeOutcome(err), err
	})
	left := 0
	for i := range rel {
		if a.maybe[i] && (answers[i] == unknown || rel[i] != yes) {
			left++
		} else {
			a.maybe[i] = false
		}
	}
	if left >= m.quorum {
		return a, fmt.Errorf("lock outcome unknown: %d of %d masters may hold it (%s)", left, len(m.nodes),
			strings.Trim(m.describe(errs)+"; "+m.describe(relErrs), "; "))
	}
	return a, nil
}

// renewal is the keepalive's view after one round of renewals.
type renewal struct {
	renewed    bool
	validUntil time.Time
	// lost: too many masters answered that the value is not ours for a
	// quorum to hold it.
	lost bool
	why  string
}

// extend renews the lock's expiry on every master.
func (m *masters) extend(ctx context.Context, key, value string) renewal {
	start := time.Now()
	answers, errs := m.onEach(ctx, func(ctx context.Context, i int) (answer, error) {
		n, err := renew.Run(ctx, m.nodes[i], []string{lockKey(key)}, value, m.ttl.Milliseconds()).Int64()
		if err != nil {
			return unknown, err
		}
		if n == 0 {
			return no, nil
		}
		return yes, nil
	})
	var ok, gone int
	for _, a := range answers {
		switch a {
		case yes:
			ok++
		case no:
			gone++
		}
	}
	switch {
	case ok >= m.quorum && m.ttl-time.Since(start)-m.drift > 0:
		return renewal{renewed: true, validUntil: start.Add(m.ttl - m.drift)}
	case gone > len(m.nodes)-m.quorum:
		return renewal{lost: true, why: fmt.Sprintf("%d of %d masters no longer hold our value", gone, len(m.nodes))}
	}
	return renewal{why: m.describe(errs)}
}

// unlock releases on every master (maybe marks those that may hold our
// value). It is ok when some master deleted our value and too few may
// still hold it for a quorum; a definite failure when nothing was deleted
// for certain (no master held our value, or they refused); unknown
// otherwise.
func (m *masters) unlock(ctx context.Context, key, value string, maybe []bool) error {
	answers, errs := m.onEach(ctx, func(ctx context.Context, i int) (answer, error) {
		n, err := release.Run(ctx, m.nodes[i], []string{lockKey(key)}, value).Int64()
		if err != nil {
			return nodeOutcome(err), err
		}
		if n == 0 {
			return no, nil // not ours (any more): nothing to do there
		}
		return yes, nil
	})
	deleted, refused, unanswered := 0, 0, 0
	for i, a := range answers {
		switch {
		case a == yes:
			deleted++
		case !maybe[i]:
		case a == unknown:
			unanswered++
		case errs[i] != nil:
			refused++
		}
	}
	switch {
	case deleted > 0 && refused+unanswered < m.quorum:
		return nil
	case deleted == 0 && unanswered == 0:
		if d := m.describe(errs); d != "" {
			return lockclient.Failf("not released: %s", d)
		}
		return lockclient.Failf("not the holder: no master holds our value (the lock had expired)")
	}
	return fmt.Errorf("release outcome unknown: %d of %d masters deleted our value, %d refused, %d did not answer (%s)",
		deleted, len(m.nodes), refused, unanswered, m.describe(errs))
}
