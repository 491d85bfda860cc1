// Package agent runs one client process in its own OS process and drives it
// from the harness over the exec stream, in the client protocol of
// docs/client-protocol.md (package lockclient): JSON lines on stdin and
// stdout, no port, so a partition never cuts the harness from its agents,
// and pausing the container freezes the client's work and its lease
// keepalive together.
//
// Serve is the built-in agent (`check agent`, and a backend's own agent
// program such as check-kubernetes): a backends.Client behind
// lockclient.Serve, opened from the spec ClientSpec reads from init.
// Remote is the harness's side, for the built-in agent and for a user's
// client (`check --client DIR`) alike: it sends init, waits for ready, and
// turns every answer back into the error a backends.Client returns.
// Anything a client does outside the protocol — no ready, a refusal,
// garbage, a line over 64 KiB, silence past the deadline, an exit — is an
// unknown outcome for the op in flight, and the process is retired; it
// never guesses that an op failed.
//
// The agent reports its own readings of when each op was issued and
// answered (CLOCK_MONOTONIC, which every container on the host shares): the
// harness checks once per agent that the clock is shared and then records
// those readings beside its own. The harness still stamps every event on its
// own clock and decides what a missing answer means.
package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Opener opens the built-in agent's backends.Client from the init message.
type Opener func(ctx context.Context, init lockclient.Init) (backends.Client, error)

// Serve runs the built-in agent on r and w: it opens its client with open
// when init arrives and executes requests until r ends.
func Serve(r io.Reader, w io.Writer, open Opener) error {
	b := &builtin{open: open}
	defer b.close()
	return lockclient.Serve(r, w, b)
}

// builtin is a backends.Client as a lockclient.Client.
type builtin struct {
	open Opener
	c    backends.Client
}

func (b *builtin) close() {
	if b.c != nil {
		b.c.Close()
	}
}

func (b *builtin) Open(ctx context.Context, init lockclient.Init) error {
	c, err := b.open(ctx, init)
	if err != nil {
		return err
	}
	b.c = c
	return nil
}

func (b *builtin) Acquire(ctx context.Context, key string) (uint64, error) {
	return b.c.Acquire(ctx, key)
}

func (b *builtin) Read(ctx context.Context, key string, token uint64) (int64, error) {
	return b.c.Read(ctx, key, token)
}

func (b *builtin) ReadLockFree(ctx context.Context, key string) (int64, error) {
	lf, ok := b.c.(backends.LockFreeReader)
	if !ok {
		return 0, lockclient.Failf("this recipe's client does not read without the lock")
	}
	return lf.ReadLockFree(ctx, key)
}

func (b *builtin) Write(ctx context.Context, key string, token uint64, prev, value int64, checkpoint func(string)) error {
	return b.c.Write(backends.WithFailpoint(ctx, checkpoint), key, token, prev, value)
}

func (b *builtin) Release(ctx context.Context, key string) error {
	return b.c.Release(ctx, key)
}

// ErrAgentGone is the unknown outcome of an op whose agent died, hung past
// the op's deadline or spoke garbage.
var ErrAgentGone = errors.New("agent gone")

// Remote is a backends.Client whose ops run in an agent process.
type Remote struct {
	in   io.WriteCloser
	stop func() error
	// Gone, when set before the first op, is told once why the agent was
	// given up (garbage, a long line, silence, an exit), for the run's log.
	Gone func(err error)

	mu     sync.Mutex // one op at a time
	nextID uint64
	dead   error
	lines  chan lineOrErr
	// flooded: the reader stopped the agent for flooding its stdout.
	flooded atomic.Bool
	// trace, when set, sees every line sent (true) and received.
	trace func(sent bool, line []byte)
	// sharedClock: the agent's monotonic readings are the harness's
	// (checked at start); last holds the readings of the last op.
	sharedClock bool
	last        lockclient.Answer
}

type lineOrErr struct {
	line []byte
	err  error
}

// HandshakeError is a client that did not become ready: it refused, spoke
// another version, answered something else, exited or said nothing.
type HandshakeError struct {
	// Refused is the client's own reason when it refused.
	Refused string
	Err     error
}

func (e *HandshakeError) Error() string {
	if e.Refused != "" {
		return "it refused: " + e.Refused
	}
	return e.Err.Error()
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// ReadyTimeout is how long an agent has to answer init.
const ReadyTimeout = lockclient.OpenTimeout

// NewRemote talks to an agent through its stdin and stdout; stop ends it.
// It sends init and waits for ready (until ctx ends), then asks for the
// agent's clock. An error is a *HandshakeError; the agent is stopped.
func NewRemote(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, stop func() error, init lockclient.Init) (*Remote, error) {
	return NewTracedRemote(ctx, stdin, stdout, stop, init, nil)
}

// NewTracedRemote is NewRemote with trace (may be nil) shown every line
// sent to the agent (sent true) and received from it, init included.
func NewTracedRemote(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, stop func() error, init lockclient.Init,
	trace func(sent bool, line []byte)) (*Remote, error) {
	r := &Remote{in: stdin, stop: stop, lines: make(chan lineOrErr, maxQueued), trace: trace}
	go r.readLines(stdout)
	init.Type, init.Protocol = lockclient.TypeInit, lockclient.Version
	if _, err := r.send(lockclient.Line(init)); err != nil {
		stop()
		return nil, &HandshakeError{Err: fmt.Errorf("sending init: %w (did it exit?)", err)}
	}
	fail := func(err error) (*Remote, error) {
		stop()
		var h *HandshakeError
		if !errors.As(err, &h) {
			h = &HandshakeError{Err: err}
		}
		return nil, h
	}
	select {
	case l, ok := <-r.lines:
		if !ok || l.err != nil {
			return fail(fmt.Errorf("it never answered ready: %s", lineError(l.err)))
		}
		var h lockclient.Hello
		if err := json.Unmarshal(l.line, &h); err != nil {
			return fail(fmt.Errorf("it answered init with %q, not ready", lockclient.Excerpt(l.line)))
		}
		switch {
		case h.Type == lockclient.TypeRefuse:
			return fail(&HandshakeError{Refused: orText(h.Error, "(no reason given)")})
		case h.Type != lockclient.TypeReady:
			return fail(fmt.Errorf("it answered init with %q, not ready", lockclient.Excerpt(l.line)))
		case h.Protocol != lockclient.Version:
			return fail(fmt.Errorf("it speaks protocol %d; this fencecheck speaks %d", h.Protocol, lockclient.Version))
		}
	case <-ctx.Done():
		return fail(fmt.Errorf("it never answered ready (%w)", ctx.Err()))
	}
	shared, err := r.clockIsShared(ctx)
	if err != nil {
		return fail(fmt.Errorf("it answered ready but not the clock request (an unknown op must be answered fail): %w", err))
	}
	r.sharedClock = shared
	return r, nil
}

func orText(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// lineError says what went wrong reading the agent's stdout.
func lineError(err error) string {
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return "it exited (its stdout closed)"
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Sprintf("it wrote a line over %d KiB", lockclient.MaxLine>>10)
	case errors.Is(err, errFlood):
		return errFlood.Error()
	}
	return err.Error()
}

// send writes one line to the agent.
func (r *Remote) send(line []byte) (int, error) {
	if r.trace != nil {
		r.trace(true, line)
	}
	n, err := r.in.Write(line)
	if err != nil && r.flooded.Load() {
		err = errFlood
	}
	return n, err
}

// maxQueued bounds the lines an agent may write that nobody has read yet
// (answers to ops given up on, or output nobody asked for): past it the
// agent is flooding its stdout and is stopped, so a chatty program cannot
// fill the harness's memory between ops.
const maxQueued = 64

// errFlood is an agent stopped for writing lines nobody asked for.
var errFlood = fmt.Errorf("it wrote more than %d lines on stdout that answer nothing (logs belong on stderr)", maxQueued)

func (r *Remote) readLines(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 4096), lockclient.MaxLine)
	var err error
	for sc.Scan() {
		if r.trace != nil {
			r.trace(false, sc.Bytes())
		}
		select {
		case r.lines <- lineOrErr{line: append([]byte(nil), sc.Bytes()...)}:
			continue
		default:
		}
		err = errFlood
		r.flooded.Store(true)
		r.stop()
		break
	}
	if err == nil {
		err = sc.Err()
	}
	if err == nil {
		err = io.EOF
	}
	if r.trace != nil {
		r.trace(false, []byte(fmt.Sprintf("(%s)", lineError(err))))
	}
	r.lines <- lineOrErr{err: err}
	close(r.lines)
	if errors.Is(err, bufio.ErrTooLong) || errors.Is(err, errFlood) {
		// Keep draining so a flooding agent never blocks on its stdout.
		io.Copy(io.Discard, stdout)
	}
}

// clockIsShared asks the agent for its monotonic clock and accepts it only
// if the reading falls between the harness's own readings before the
// request and after the answer — true for every container on this host,
// false for an agent on another kernel (or one that cannot read it, or
// answers anything but ok), whose readings are then ignored.
func (r *Remote) clockIsShared(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	before, ok := lockclient.Monotonic()
	rep, err := r.call(ctx, lockclient.Request{F: lockclient.OpClock})
	after, _ := lockclient.Monotonic()
	if err != nil {
		return false, err
	}
	return ok && rep.Type == lockclient.TypeOK && before <= rep.Value && rep.Value <= after, nil
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
	if !r.sharedClock || r.last.Call == 0 || r.last.Return < r.last.Call {
		return 0, 0, false
	}
	ret = r.last.Return
	if r.last.Type == lockclient.TypeInfo {
		ret = 0
	}
	return r.last.Call, ret, true
}

// call sends one request and waits for its answer or the deadline. Any
// failure to get a well-formed answer kills the agent: the op's outcome is
// unknown and the harness retires the process.
func (r *Remote) call(ctx context.Context, req lockclient.Request) (lockclient.Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead != nil {
		return lockclient.Answer{}, lockclient.Failf("agent already gone: %v", r.dead)
	}
	r.nextID++
	req.ID = r.nextID
	r.last = lockclient.Answer{}
	if dl, ok := ctx.Deadline(); ok {
		// The agent gives up a little before the harness does, so an op
		// that ends at its deadline is answered (often as a definite
		// failure) rather than lost to the race.
		left := time.Until(dl)
		req.TimeoutMs = max((left - min(left/10, 500*time.Millisecond)).Milliseconds(), 1)
	}
	hook := backends.FailpointHook(ctx)
	req.Stop = hook != nil && req.F == lockclient.OpWrite
	if _, err := r.send(lockclient.Line(req)); err != nil {
		err = fmt.Errorf("sending %s: %v (did it exit?)", req.F, err)
		r.kill(err)
		// Nothing may have reached the agent, or all of it: unknown.
		return lockclient.Answer{}, fmt.Errorf("%w: %v", ErrAgentGone, err)
	}
	for {
		select {
		case <-ctx.Done():
			err := fmt.Errorf("it did not answer %s (id %d) before the op's deadline", req.F, req.ID)
			r.kill(err)
			return lockclient.Answer{}, fmt.Errorf("%w: %v", ErrAgentGone, err)
		case l, ok := <-r.lines:
			if !ok || l.err != nil {
				var err error
				if ok {
					err = l.err
				}
				e := fmt.Errorf("%s during %s (id %d)", lineError(err), req.F, req.ID)
				r.kill(e)
				return lockclient.Answer{}, fmt.Errorf("%w: %v", ErrAgentGone, e)
			}
			var rep lockclient.Answer
			if err := json.Unmarshal(l.line, &rep); err != nil || rep.Type == "" {
				e := fmt.Errorf("it answered %s (id %d) with garbage %q", req.F, req.ID, lockclient.Excerpt(l.line))
				r.kill(e)
				return lockclient.Answer{}, fmt.Errorf("%w: %v", ErrAgentGone, e)
			}
			if rep.ID < req.ID {
				continue // a late answer to an op already given up on
			}
			if rep.ID != req.ID {
				e := fmt.Errorf("it answered id %d to request %d", rep.ID, req.ID)
				r.kill(e)
				return lockclient.Answer{}, fmt.Errorf("%w: %v", ErrAgentGone, e)
			}
			if rep.Type == lockclient.TypeCheckpoint {
				if hook != nil {
					hook(orText(rep.Name, rep.Error))
				}
				if _, err := r.send(lockclient.Line(lockclient.Request{ID: req.ID, F: lockclient.OpContinue})); err != nil {
					e := fmt.Errorf("sending continue: %v", err)
					r.kill(e)
					return lockclient.Answer{}, fmt.Errorf("%w: %v", ErrAgentGone, e)
				}
				continue
			}
			switch rep.Type {
			case lockclient.TypeOK, lockclient.TypeFail, lockclient.TypeInfo:
			default:
				e := fmt.Errorf("it answered %s (id %d) with type %q (want ok, fail or info)", req.F, req.ID, rep.Type)
				r.kill(e)
				return lockclient.Answer{}, fmt.Errorf("%w: %v", ErrAgentGone, e)
			}
			r.last = rep
			return rep, nil
		}
	}
}

func (r *Remote) kill(err error) {
	if r.dead == nil {
		r.dead = err
		if r.Gone != nil {
			r.Gone(err)
		}
		go r.stop()
	}
}

func (r *Remote) Acquire(ctx context.Context, key string) (uint64, error) {
	rep, err := r.call(ctx, lockclient.Request{F: lockclient.OpAcquire, Key: key})
	if err != nil {
		return 0, err
	}
	return rep.Token, lockclient.AnswerError(rep.Type, rep.Error)
}

func (r *Remote) Read(ctx context.Context, key string, token uint64) (int64, error) {
	rep, err := r.call(ctx, lockclient.Request{F: lockclient.OpRead, Key: key, Token: token})
	if err != nil {
		return 0, err
	}
	return rep.Value, lockclient.AnswerError(rep.Type, rep.Error)
}

// ReadLockFree asks the agent for a read without the lock
// (lockclient.OpReadLockFree).
func (r *Remote) ReadLockFree(ctx context.Context, key string) (int64, error) {
	rep, err := r.call(ctx, lockclient.Request{F: lockclient.OpReadLockFree, Key: key})
	if err != nil {
		return 0, err
	}
	return rep.Value, lockclient.AnswerError(rep.Type, rep.Error)
}

func (r *Remote) Write(ctx context.Context, key string, token uint64, prev, value int64) error {
	rep, err := r.call(ctx, lockclient.Request{F: lockclient.OpWrite, Key: key, Token: token, Prev: prev, Value: value})
	if err != nil {
		return err
	}
	return lockclient.AnswerError(rep.Type, rep.Error)
}

func (r *Remote) Release(ctx context.Context, key string) error {
	rep, err := r.call(ctx, lockclient.Request{F: lockclient.OpRelease, Key: key})
	if err != nil {
		return err
	}
	return lockclient.AnswerError(rep.Type, rep.Error)
}

// Call sends one raw request (any f) and returns the answer, for
// `check client-test`; ctx's deadline is the op's.
func (r *Remote) Call(ctx context.Context, req lockclient.Request) (lockclient.Answer, error) {
	return r.call(ctx, req)
}

// Retired reports whether the agent was given up (or closed): every
// later op fails definitely without reaching it.
func (r *Remote) Retired() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dead != nil
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
