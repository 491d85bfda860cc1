package lockclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Client is one process's lock client: the code under test. Serve calls
// its methods one at a time.
//
// An error decides the op's outcome: ErrFenced (the storage refused the
// token) and errors wrapped by Fail are fail — the op certainly did not
// take effect; every other error is info — the outcome is unknown, and
// fencecheck retires the process. When in doubt, return a plain error.
type Client interface {
	// Open connects to the service and the storage that init names.
	// An error is a refusal: the run ends before any op, with its text.
	Open(ctx context.Context, init Init) error
	// Acquire blocks until the lock on key is held and returns its
	// fencing token (0 when the recipe has none).
	Acquire(ctx context.Context, key string) (token uint64, err error)
	// Read returns the storage's value of key, presenting token.
	Read(ctx context.Context, key string, token uint64) (int64, error)
	// Write stores value, presenting token; prev is what this process read.
	// It calls checkpoint(FailpointWriteChecked) after its last check that
	// it holds the lock and before the write leaves: that is where
	// fencecheck may freeze it. checkpoint is never nil.
	Write(ctx context.Context, key string, token uint64, prev, value int64, checkpoint func(name string)) error
	// Release gives up the lock on key.
	Release(ctx context.Context, key string) error
}

// LockFreeReader is a Client that can also read the storage without
// holding the lock (the op read-lock-free): no token is presented, and the
// storage neither refuses it as stale nor moves its fence for it.
type LockFreeReader interface {
	ReadLockFree(ctx context.Context, key string) (int64, error)
}

// OpenTimeout is how long a client has to open and answer ready.
const OpenTimeout = 30 * time.Second

// Serve speaks the protocol on in and out for c until in ends: it reads
// init, opens c (answering ready, or refuse when the version is not
// Version or Open fails), then executes requests one at a time. It answers
// clock itself and unknown ops with fail. It returns nil when in ends
// after a ready, and an error when the client refused or a line could not
// be read or written.
func Serve(in io.Reader, out io.Writer, c Client) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 4096), MaxLine)
	send := func(m any) error {
		_, err := out.Write(Line(m))
		return err
	}
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return fmt.Errorf("reading init: %w", err)
		}
		return errors.New("no init line on stdin")
	}
	var init Init
	if err := json.Unmarshal(sc.Bytes(), &init); err != nil || init.Type != TypeInit {
		reason := fmt.Sprintf("the first line is not an init message: %q", Excerpt(sc.Bytes()))
		send(Hello{Type: TypeRefuse, Protocol: Version, Error: reason})
		return errors.New(reason)
	}
	if init.Protocol != Version {
		reason := fmt.Sprintf("this client speaks protocol %d, not %d", Version, init.Protocol)
		send(Hello{Type: TypeRefuse, Protocol: Version, Error: reason})
		return errors.New(reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), OpenTimeout)
	err := c.Open(ctx, init)
	cancel()
	if err != nil {
		send(Hello{Type: TypeRefuse, Protocol: Version, Error: err.Error()})
		return fmt.Errorf("opening the client: %w", err)
	}
	if err := send(Hello{Type: TypeReady, Protocol: Version}); err != nil {
		return err
	}
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("malformed request %q: %w", Excerpt(sc.Bytes()), err)
		}
		if req.F == OpClock {
			now, ok := Monotonic()
			ans := Answer{ID: req.ID, Type: TypeOK, Value: now}
			if !ok {
				ans = Answer{ID: req.ID, Type: TypeFail, Error: "no CLOCK_MONOTONIC here"}
			}
			if err := send(ans); err != nil {
				return err
			}
			continue
		}
		ans := execute(c, req, func(name string, cancel func()) {
			// At the failpoint: say so, then wait for continue. fencecheck
			// freezes this process in between. If stdin ends instead, the
			// op is given up.
			send(Answer{ID: req.ID, Type: TypeCheckpoint, Name: name})
			if !sc.Scan() {
				cancel()
			}
		})
		if err := send(ans); err != nil {
			return err
		}
	}
	return sc.Err()
}

// execute runs one request on c. stop is called at the write's
// checkpoint when the request asks for it.
func execute(c Client, req Request, stop func(name string, cancel func())) (ans Answer) {
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ans = Answer{ID: req.ID}
	defer func() {
		if p := recover(); p != nil {
			ans = Answer{ID: req.ID, Type: TypeInfo, Error: fmt.Sprintf("the client panicked: %v", p)}
		}
	}()
	checkpoint := func(string) {}
	if req.Stop {
		done := false
		checkpoint = func(name string) {
			if !done { // once per op
				done = true
				stop(name, cancel)
			}
		}
	}
	ans.Call, _ = Monotonic()
	var err error
	switch req.F {
	case OpAcquire:
		ans.Token, err = c.Acquire(ctx, req.Key)
	case OpRead:
		ans.Value, err = c.Read(ctx, req.Key, req.Token)
	case OpWrite:
		err = c.Write(ctx, req.Key, req.Token, req.Prev, req.Value, checkpoint)
	case OpRelease:
		err = c.Release(ctx, req.Key)
	case OpReadLockFree:
		lf, ok := c.(LockFreeReader)
		if !ok {
			err = Failf("this client does not read without the lock (%s)", OpReadLockFree)
			break
		}
		ans.Value, err = lf.ReadLockFree(ctx, req.Key)
	default:
		err = Failf("unknown op %q", req.F)
	}
	ans.Return, _ = Monotonic()
	ans.Type, ans.Error = Outcome(err)
	if ans.Type != TypeOK {
		ans.Token, ans.Value = 0, 0
	}
	return ans
}

// Excerpt is the start of a protocol line (at most 200 bytes), for an
// error message that quotes it with %q.
func Excerpt(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
