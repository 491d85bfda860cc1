package zookeeper

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// session is one ZooKeeper session on one zk.Conn: the lease. It is lost
// for good the first time the connection drops or the server expires it
// after it was established: a client cannot know, while disconnected,
// whether the ensemble still counts its session, so it stops trusting
// every lock the session holds. A lost session is closed (which deletes
// its ephemeral znodes if the close reaches a server; the leader's expiry
// does it otherwise) and never used again.
type session struct {
	conn    *zk.Conn
	ready   chan struct{} // closed when the session is established
	lost    chan struct{} // closed when it is lost (or closed)
	granted atomic.Int64  // the timeout the server granted, in ms (0: not yet known)

	mu       sync.Mutex
	isReady  bool
	isLost   bool
	why      string
	closeRun sync.Once
}

// dial opens a session with the servers and waits, under ctx, until the
// ensemble has established it.
func dial(ctx context.Context, servers []string, timeout time.Duration) (*session, error) {
	s := &session{ready: make(chan struct{}), lost: make(chan struct{})}
	// The callback sees every session event; the event channel zk.Connect
	// returns drops events when nobody drains it in time.
	conn, _, err := zk.Connect(servers, timeout, zk.WithEventCallback(s.event), zk.WithLogger(s), zk.WithLogInfo(true))
	if err != nil {
		return nil, err
	}
	s.conn = conn
	select {
	case <-s.ready:
		return s, nil
	case <-ctx.Done():
		go s.close()
		return nil, fmt.Errorf("no session established: %w", ctx.Err())
	}
}

// event follows the session's state. It must not block: go-zk calls it
// from its connection loop.
func (s *session) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.State {
	case zk.StateHasSession:
		if !s.isReady {
			s.isReady = true
			close(s.ready)
		}
	case zk.StateExpired:
		if s.isReady {
			s.markLostLocked("session expired")
		}
	case zk.StateDisconnected, zk.StateAuthFailed:
		if s.isReady {
			s.markLostLocked("disconnected from " + ev.Server)
		}
	}
}

// Printf is go-zk's logger: it keeps the session timeout the server
// granted (go-zk exposes it nowhere else) and drops the rest, which a
// test run's partitions would turn into noise.
func (s *session) Printf(format string, args ...any) {
	if format == "authenticated: id=%d, timeout=%d" && len(args) == 2 {
		if ms, ok := args[1].(int32); ok {
			s.granted.CompareAndSwap(0, int64(ms))
		}
	}
}

// grantedTimeout waits briefly for the grant: go-zk logs it just after the
// session is established.
func (s *session) grantedTimeout(ctx context.Context) time.Duration {
	for i := 0; i < 50 && ctx.Err() == nil; i++ {
		if ms := s.granted.Load(); ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

func (s *session) markLost(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markLostLocked(why)
}

func (s *session) markLostLocked(why string) {
	if !s.isLost {
		s.isLost, s.why = true, why
		close(s.lost)
	}
}

// lostWhy says why the session is lost ("" while it is not).
func (s *session) lostWhy() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.why
}

// close ends the session: go-zk sends the server a close request, which
// deletes the session's ephemeral znodes at once. It may block for a
// couple of seconds when no server answers.
func (s *session) close() {
	s.markLost("closed")
	s.closeRun.Do(s.conn.Close)
}

// abandon gives the session up without waiting.
func (s *session) abandon(why string) {
	s.markLost(why)
	go s.close()
}
