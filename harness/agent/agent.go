// Package agent runs one client process in its own OS process — `check
// agent`, inside a client container — and drives it from the harness over
// the exec stream: JSON lines on stdin and stdout, no port, so a partition
// never cuts the harness from its agents, and pausing the container freezes
// the client's work and its lease keepalive together.
//
// The agent executes ops and reports their outcome with its own readings of
// when each op was issued and answered (CLOCK_MONOTONIC, which every
// container on the host shares): the harness checks once per agent that
// the clock is shared and then records those readings beside its own, so
// the history's intervals do not include the exec stream's transit. The
// harness still stamps every event on its own clock and decides what a
// missing answer means.
package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/history"
)

// Request is one op for the agent.
type Request struct {
	ID      uint64 `json:"id"`
	F       string `json:"f"`
	Key     string `json:"key"`
	Token   uint64 `json:"token,omitempty"`
	Prev    int64  `json:"prev,omitempty"`
	Value   int64  `json:"value,omitempty"`
	Timeout int64  `json:"timeout_ms"`
	// Stop asks the agent to stop at the op's failpoints: it answers
	// {"type":"checkpoint","error":NAME} and waits for {"f":"continue"}.
	Stop bool `json:"stop,omitempty"`
}

// Checkpoint is the reply type of an op stopped at a failpoint.
const Checkpoint history.Type = "checkpoint"

// Continue is the f of the line that lets a stopped op go on.
const Continue = "continue"

// Reply is the agent's answer.
type Reply struct {
	ID    uint64       `json:"id"`
	Type  history.Type `json:"type"`
	Token uint64       `json:"token,omitempty"`
	Value int64        `json:"value,omitempty"`
	Error string       `json:"error,omitempty"`
	// Call and Return are the agent's CLOCK_MONOTONIC readings (ns) just
	// before the op went to the client and just after its answer.
	Call   int64 `json:"call,omitempty"`
	Return int64 `json:"return,omitempty"`
}

// Clock is the f of a request the agent answers at once with its
// CLOCK_MONOTONIC reading in value.
const Clock = "clock"

// maxLine bounds a protocol line in both directions.
const maxLine = 64 << 10

// Serve executes requests from r one at a time on c and writes replies to
// w, until r ends. The first line it writes is {"id":0,"type":"ok"}: the
// agent is ready.
func Serve(r io.Reader, w io.Writer, c backends.Client) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(Reply{Type: history.OK}); err != nil {
		return err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("malformed request %q: %w", sc.Text(), err)
		}
		if req.F == Clock {
			now, _ := history.Monotonic()
			if err := enc.Encode(Reply{ID: req.ID, Type: history.OK, Value: now}); err != nil {
				return err
			}
			continue
		}
		var hook func(string)
		if req.Stop {
			// At a failpoint: say so, then wait for the harness's
			// word. The harness freezes this process in between.
			hook = func(name string) {
				enc.Encode(Reply{ID: req.ID, Type: Checkpoint, Error: name})
				if sc.Scan() {
					var cont Request
					json.Unmarshal(sc.Bytes(), &cont)
				}
			}
		}
		if err := enc.Encode(Execute(c, req, hook)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Execute runs one request on c; hook, if not nil, is called at the
// recipe's failpoints.
func Execute(c backends.Client, req Request, hook func(string)) Reply {
	timeout := time.Duration(req.Timeout) * time.Millisecond
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if hook != nil {
		ctx = backends.WithFailpoint(ctx, hook)
	}
	rep := Reply{ID: req.ID}
	rep.Call, _ = history.Monotonic()
	var err error
	switch req.F {
	case history.Acquire:
		rep.Token, err = c.Acquire(ctx, req.Key)
	case history.Read:
		rep.Value, err = c.Read(ctx, req.Key, req.Token)
	case history.Write:
		err = c.Write(ctx, req.Key, req.Token, req.Prev, req.Value)
	case history.Release:
		err = c.Release(ctx, req.Key)
	default:
		err = backends.Definitef("unknown f %q", req.F)
	}
	rep.Return, _ = history.Monotonic()
	rep.Type, rep.Error = backends.Outcome(err)
	return rep
}

// ErrAgentGone is the unknown outcome of an op whose agent died, hung past
// the op's deadline or spoke garbage.
var ErrAgentGone = errors.New("agent gone")

// Remote is a backends.Client whose ops run in an agent process.
type Remote struct {
	in   io.WriteCloser
	out  *bufio.Scanner
	stop func() error

	mu     sync.Mutex // one op at a time
	nextID uint64
	dead   error
	lines  chan lineOrErr
	// sharedClock: the agent's monotonic readings are the harness's
	// (checked at start); last holds the readings of the last op.
	sharedClock bool
	last        Reply
}

type lineOrErr struct {
	line []byte
	err  error
}

// NewRemote talks to an agent through its stdin and stdout; stop ends it.
// It waits for the agent's ready line.
func NewRemote(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, stop func() error) (*Remote, error) {
	r := &Remote{in: stdin, stop: stop, lines: make(chan lineOrErr, 1)}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 4096), maxLine)
	r.out = sc
	go func() {
		for sc.Scan() {
			r.lines <- lineOrErr{line: append([]byte(nil), sc.Bytes()...)}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		r.lines <- lineOrErr{err: err}
		close(r.lines)
	}()
	select {
	case l, ok := <-r.lines:
		if !ok || l.err != nil {
			stop()
			return nil, fmt.Errorf("the agent did not start: %v", l.err)
		}
		var rep Reply
		if err := json.Unmarshal(l.line, &rep); err != nil || rep.Type != history.OK {
			stop()
			return nil, fmt.Errorf("the agent did not start: it said %q", l.line)
		}
	case <-ctx.Done():
		stop()
		return nil, fmt.Errorf("the agent did not start: %w", ctx.Err())
	}
	shared, err := r.clockIsShared(ctx)
	if err != nil {
		return nil, fmt.Errorf("the agent started but did not answer: %w", err)
	}
	r.sharedClock = shared
	return r, nil
}

// clockIsShared asks the agent for its monotonic clock and accepts it only
// if the reading falls between the harness's own readings before the
// request and after the answer — true for every container on this host,
// false for an agent on another kernel (or one that cannot read it), whose
// readings are then ignored.
func (r *Remote) clockIsShared(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	before, ok := history.Monotonic()
	rep, err := r.call(ctx, Request{F: Clock})
	after, _ := history.Monotonic()
	if err != nil {
		return false, err
	}
	return ok && rep.Type == history.OK && before <= rep.Value && rep.Value <= after, nil
}

// SharedClock reports whether the agent's readings are on the harness's
// clock.
func (r *Remote) SharedClock() bool { return r.sharedClock }

// LastSpan returns the agent's CLOCK_MONOTONIC readings of when the last op
// was issued and answered; ok is false when there are none to trust (the
// clock is not shared, or the op got no answer). ret is 0 for an op whose
// outcome is unknown.
func (r *Remote) LastSpan() (call, ret int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.sharedClock || r.last.Call == 0 {
		return 0, 0, false
	}
	ret = r.last.Return
	if r.last.Type == history.Info {
		ret = 0
	}
	return r.last.Call, ret, true
}

// call sends one request and waits for its reply or the deadline. Any
// failure to get a well-formed reply kills the agent: the op's outcome is
// unknown and the harness retires the process.
func (r *Remote) call(ctx context.Context, req Request) (Reply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead != nil {
		return Reply{}, backends.Definitef("agent already gone: %v", r.dead)
	}
	r.nextID++
	req.ID = r.nextID
	r.last = Reply{}
	if dl, ok := ctx.Deadline(); ok {
		// The agent gives up a little before the harness does, so an op
		// that ends at its deadline is answered (often as a definite
		// failure) rather than lost to the race.
		left := time.Until(dl)
		req.Timeout = max((left - min(left/10, 500*time.Millisecond)).Milliseconds(), 1)
	}
	hook := backends.FailpointHook(ctx)
	req.Stop = hook != nil
	b, _ := json.Marshal(req)
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		r.kill(err)
		// Nothing may have reached the agent, or all of it: unknown.
		return Reply{}, fmt.Errorf("%w: sending: %v", ErrAgentGone, err)
	}
	for {
		select {
		case <-ctx.Done():
			r.kill(ctx.Err())
			return Reply{}, fmt.Errorf("%w: no answer before the op's deadline", ErrAgentGone)
		case l, ok := <-r.lines:
			if !ok || l.err != nil {
				err := io.EOF
				if ok {
					err = l.err
				}
				r.kill(err)
				return Reply{}, fmt.Errorf("%w: %v", ErrAgentGone, err)
			}
			var rep Reply
			if err := json.Unmarshal(l.line, &rep); err != nil {
				r.kill(err)
				return Reply{}, fmt.Errorf("%w: it answered garbage %q", ErrAgentGone, truncate(l.line))
			}
			if rep.ID < req.ID {
				continue // a late answer to an op already given up on
			}
			if rep.ID != req.ID {
				r.kill(errors.New("reply out of order"))
				return Reply{}, fmt.Errorf("%w: reply %d to request %d", ErrAgentGone, rep.ID, req.ID)
			}
			if rep.Type == Checkpoint {
				if hook != nil {
					hook(rep.Error)
				}
				cont, _ := json.Marshal(Request{ID: req.ID, F: Continue})
				if _, err := r.in.Write(append(cont, '\n')); err != nil {
					r.kill(err)
					return Reply{}, fmt.Errorf("%w: sending continue: %v", ErrAgentGone, err)
				}
				continue
			}
			r.last = rep
			return rep, nil
		}
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func (r *Remote) kill(err error) {
	if r.dead == nil {
		r.dead = err
		go r.stop()
	}
}

// errorOf turns a reply back into the error the agent's client returned.
func errorOf(rep Reply) error {
	switch rep.Type {
	case history.OK:
		return nil
	case history.Fail:
		if rep.Error == history.ErrFenced {
			return backends.ErrFenced
		}
		return backends.Definite(errors.New(rep.Error))
	case history.Info:
		return errors.New(rep.Error)
	}
	return fmt.Errorf("%w: unknown reply type %q", ErrAgentGone, rep.Type)
}

func (r *Remote) Acquire(ctx context.Context, key string) (uint64, error) {
	rep, err := r.call(ctx, Request{F: history.Acquire, Key: key})
	if err != nil {
		return 0, err
	}
	return rep.Token, errorOf(rep)
}

func (r *Remote) Read(ctx context.Context, key string, token uint64) (int64, error) {
	rep, err := r.call(ctx, Request{F: history.Read, Key: key, Token: token})
	if err != nil {
		return 0, err
	}
	return rep.Value, errorOf(rep)
}

func (r *Remote) Write(ctx context.Context, key string, token uint64, prev, value int64) error {
	rep, err := r.call(ctx, Request{F: history.Write, Key: key, Token: token, Prev: prev, Value: value})
	if err != nil {
		return err
	}
	return errorOf(rep)
}

func (r *Remote) Release(ctx context.Context, key string) error {
	rep, err := r.call(ctx, Request{F: history.Release, Key: key})
	if err != nil {
		return err
	}
	return errorOf(rep)
}

// Close ends the agent: its stdin closes and it exits.
func (r *Remote) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.in.Close()
	if r.dead == nil {
		r.dead = errors.New("closed")
		return r.stop()
	}
	return nil
}
