package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/nemesis"
)

// worker is one client slot: a Jepsen-style logically single-threaded
// process. When an op's outcome is unknown the process is retired and the
// slot continues as a new process (id + number of slots) with a new client.
type worker struct {
	slot    int
	process int
	slots   int
	client  backends.Client
	sys     System
	rec     *history.Recorder
	cfg     *Config
	rng     *rand.Rand
	logf    func(string, ...any)
	// claims lets the nemesis stop this process at a failpoint of its write
	// until a fault is in place (pause-holder).
	claims *nemesis.Claims
	// acquireTimeout, when set, is an acquire's deadline in place of the
	// op timeout (--acquire-timeout; the workload's sections only).
	acquireTimeout time.Duration
	// openFailed is the last process whose client failed to open
	// (reopen.go), so that its failures are logged once.
	openFailed int
}

func keyName(i int) string { return fmt.Sprintf("k%d", i) }

// op records the invoke, runs f with the op timeout, and records the
// completion the error implies. It returns whether the op was ok and
// whether the process must be retired (info).
func (w *worker) op(e history.Event, f func(ctx context.Context) (history.Event, error)) (history.Event, bool, bool) {
	e.Process = w.process
	e.Type = history.Invoke
	inv := w.rec.Record(e)
	timeout, timeoutFlag := w.cfg.OpTimeout, "--op-timeout"
	if e.F == history.Acquire && w.acquireTimeout > 0 && w.client != nil {
		timeout, timeoutFlag = w.acquireTimeout, "--acquire-timeout"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	if w.claims != nil && e.F == history.Write {
		// A fault holds a stopped writer while it acts and then waits
		// for a takeover (at most the pause duration, which may have to
		// outlast a lease); the cap only frees a writer whose fault died.
		if hook := w.claims.Hook(w.process, max(10*time.Second, w.cfg.PauseDuration+2*w.cfg.LeaseTTL)); hook != nil {
			ctx = backends.WithFailpoint(ctx, hook)
		}
	}
	done, err := f(ctx)
	deadline, _ := ctx.Deadline()
	timedOut := ctx.Err() == context.DeadlineExceeded
	cancel()
	answer, msg := lockclient.Outcome(err)
	typ := history.Type(answer) // the answer's type is the history's
	if typ == history.Info && (timedOut || nearDeadline(msg, deadline, timeout)) {
		msg = fmt.Sprintf("no answer within %s %s, so the outcome is unknown: %s", timeoutFlag, timeout, msg)
	}
	done.Process = w.process
	done.F = e.F
	done.Key = e.Key
	done.Type = typ
	done.Error = msg
	if e.F != history.Acquire {
		done.Token = e.Token
	}
	if e.F == history.Write {
		done.Prev, done.Value = e.Prev, e.Value
	}
	w.clientSpan(&done, inv.Time)
	done = w.rec.Record(done)
	return done, typ == history.OK, typ == history.Info
}

// nearDeadline reports whether an op's error is a deadline that ran out
// with the op's own: a client in a container gives up a little before the
// harness (agent.Remote keeps up to a tenth of the time, at most 500 ms),
// so its "context deadline exceeded" arrives just before ctx expires.
func nearDeadline(msg string, deadline time.Time, timeout time.Duration) bool {
	return strings.Contains(msg, context.DeadlineExceeded.Error()) && time.Until(deadline) <= min(timeout/10, 500*time.Millisecond)+50*time.Millisecond
}

// spanner is a client in another process that reads its own clock around
// each op (agent.Remote).
type spanner interface {
	LastSpan() (call, ret int64, ok bool)
}

// clientSpan copies the client's own readings of the op just finished onto
// its completion, when they are on the test's clock and not before the
// invoke.
func (w *worker) clientSpan(done *history.Event, invoked int64) {
	s, ok := w.client.(spanner)
	if !ok {
		return
	}
	call, ret, ok := s.LastSpan()
	if !ok {
		return
	}
	if c, ok := w.rec.FromMonotonic(call); ok {
		done.Call = max(c, invoked)
	}
	if ret != 0 && done.Type != history.Info {
		if r, ok := w.rec.FromMonotonic(ret); ok {
			done.Return = max(r, done.Call, invoked)
		}
	}
}

// retire ends the current process after an info op. The slot goes on as
// a new process, whose client its next acquire opens (reopen.go): the
// service may be down right now, and the time the new client takes to
// open, or fails to, is then in the history.
func (w *worker) retire(context.Context) error {
	old := w.client
	go old.Close() // it may hang: the process is gone either way
	w.process += w.slots
	w.client = nil
	return nil
}

// sectionWork is how long this section works between its read and its
// write: --work, plus a uniformly random time in [0, --hold] drawn from the
// slot's seeded generator (nothing is drawn when --hold is 0, so runs
// without it keep their key sequence).
func (w *worker) sectionWork() time.Duration {
	d := w.cfg.Work
	if w.cfg.Dwell > 0 && w.rng != nil {
		d += time.Duration(w.rng.Int64N(int64(w.cfg.Dwell) + 1))
	}
	return d
}

// section runs one lock → read → write → release on key. A refused read
// ends the section without a write; the lock is released either way. It
// returns an error only when the slot cannot go on.
func (w *worker) section(ctx context.Context, key string) error {
	if w.claims != nil {
		defer func(p int) { w.claims.End(p) }(w.process)
	}
	var token uint64
	acq, ok, info := w.op(history.Event{F: history.Acquire, Key: key}, func(ctx context.Context) (history.Event, error) {
		if w.client == nil {
			if err := w.reopen(ctx); err != nil {
				return history.Event{}, err
			}
		}
		t, err := w.client.Acquire(ctx, key)
		return history.Event{Token: t}, err
	})
	if info {
		return w.retire(ctx)
	}
	if !ok {
		return nil
	}
	token = acq.Token
	rd, ok, info := w.op(history.Event{F: history.Read, Key: key, Token: token}, func(ctx context.Context) (history.Event, error) {
		v, err := w.client.Read(ctx, key, token)
		if err != nil {
			return history.Event{}, err
		}
		return history.Event{Value: history.Int64(v)}, nil
	})
	if info {
		return w.retire(ctx)
	}
	if ok {
		if d := w.sectionWork(); d > 0 {
			time.Sleep(d)
		}
		prev := *rd.Value
		_, _, info = w.op(history.Event{F: history.Write, Key: key, Token: token, Prev: history.Int64(prev), Value: history.Int64(prev + 1)},
			func(ctx context.Context) (history.Event, error) {
				return history.Event{}, w.client.Write(ctx, key, token, prev, prev+1)
			})
		if info {
			return w.retire(ctx)
		}
	}
	_, _, info = w.op(history.Event{F: history.Release, Key: key, Token: token}, func(ctx context.Context) (history.Event, error) {
		return history.Event{}, w.client.Release(ctx, key)
	})
	if info {
		return w.retire(ctx)
	}
	return nil
}

// lockFree draws whether the slot's next op is a lock-free read (--read-mix),
// as Jepsen's gen/mix draws among its generators: one draw per op from the
// slot's seeded generator, none at all when the mix is 0, so runs without
// it keep their key sequence.
func (w *worker) lockFree() bool {
	return w.cfg.ReadMix > 0 && w.rng.Float64() < w.cfg.ReadMix
}

// readLockFree reads key without the lock: one read op that presents no
// token, by a process that holds no lock (the history's lock-free read,
// docs/history.md). It returns an error only when the slot cannot go on.
func (w *worker) readLockFree(ctx context.Context, key string) error {
	lf, ok := w.client.(backends.LockFreeReader)
	if !ok {
		return fmt.Errorf("slot %s: its client cannot read without the lock (--read-mix)", history.SlotName(w.slot))
	}
	_, _, info := w.op(history.Event{F: history.Read, Key: key}, func(ctx context.Context) (history.Event, error) {
		v, err := lf.ReadLockFree(ctx, key)
		if err != nil {
			return history.Event{}, err
		}
		return history.Event{Value: history.Int64(v)}, nil
	})
	if info {
		return w.retire(ctx)
	}
	return nil
}

// workload is what the clients are driven with: the test's config, the
// system they are opened on, the recorder, the claims a fault stops a
// writer with (nil: none) and the log.
type workload struct {
	cfg    *Config
	sys    System
	rec    *history.Recorder
	claims *nemesis.Claims
	logf   func(string, ...any)
}

// run drives every slot until ctx ends; each slot finishes the section it
// is in (ops have their own timeouts).
// It returns the first process id no slot used.
func (wl workload) run(ctx context.Context) (int, error) {
	cfg, sys := wl.cfg, wl.sys
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := cfg.Clients
	errs := make(chan error, cfg.Clients)
	for slot := 1; slot <= cfg.Clients; slot++ {
		c, err := sys.NewClient(withProcess(ctx, slot-1), slot)
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				// The workload ended (the time limit, the first
				// violation, an interrupt) while this client was
				// still starting: not a failure of the run.
				close(errs)
				return next, <-errs
			}
			return next, fmt.Errorf("slot %s: opening a client: %w", history.SlotName(slot), err)
		}
		w := &worker{slot: slot, process: slot - 1, slots: cfg.Clients, client: c, sys: sys, rec: wl.rec, cfg: cfg,
			rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(slot))), logf: wl.logf, claims: wl.claims, acquireTimeout: cfg.AcquireTimeout}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				w.closeClient()
				mu.Lock()
				next = max(next, w.process+1)
				mu.Unlock()
			}()
			for ctx.Err() == nil {
				key := keyName(w.rng.IntN(cfg.Keys))
				do := w.section
				if w.lockFree() && w.client != nil {
					do = w.readLockFree
				}
				if err := do(ctx, key); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return next, <-errs
}

// finalReads takes, for every key, a fresh lock and reads the value, so the
// model sees the final state after every fault has been healed. An
// interrupt (stop) ends them at once: the op in flight is cut short and
// recorded as unknown, no further op is started, and what was recorded
// stays for the check. It returns how many keys were read to the end
// (their read completed, whatever its outcome).
func (wl workload) finalReads(stop context.Context, firstProcess int) (int, error) {
	cfg, sys := wl.cfg, wl.sys
	read := 0
	// withStop runs an op's call under its own deadline and the interrupt.
	withStop := func(f func(ctx context.Context) (history.Event, error)) func(ctx context.Context) (history.Event, error) {
		return func(ctx context.Context) (history.Event, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(stop, cancel)()
			return f(ctx)
		}
	}
	for k := 0; k < cfg.Keys && stop.Err() == nil; k++ {
		ctx, cancel := context.WithTimeout(stop, cfg.OpTimeout+cfg.LeaseTTL)
		c, err := sys.NewClient(withProcess(ctx, firstProcess+k), 1)
		if err != nil {
			cancel()
			if stop.Err() != nil {
				return read, nil
			}
			return read, fmt.Errorf("final read of %s: opening a client: %w", keyName(k), err)
		}
		if fr, ok := sys.(interface {
			finalReader() func(context.Context, string) (int64, error)
		}); ok {
			if read := fr.finalReader(); read != nil {
				c = directRead{Client: c, read: read}
			}
		}
		w := &worker{slot: 1, process: firstProcess + k, slots: 1, client: c, sys: sys, rec: wl.rec, cfg: cfg}
		key := keyName(k)
		acq, ok := w.finalAcquire(stop, key, withStop(func(ctx context.Context) (history.Event, error) {
			t, err := c.Acquire(ctx, key)
			return history.Event{Token: t}, err
		}))
		// A process whose op ended in info is retired, as in the
		// workload: it invokes nothing more (its lock, if any, expires).
		retired := false
		if ok && stop.Err() == nil {
			_, _, retired = w.op(history.Event{F: history.Read, Key: key, Token: acq.Token}, withStop(func(ctx context.Context) (history.Event, error) {
				v, err := c.Read(ctx, key, acq.Token)
				if err != nil {
					return history.Event{}, err
				}
				return history.Event{Value: history.Int64(v)}, nil
			}))
		}
		if stop.Err() == nil {
			read++
		}
		if acq.Type == history.OK && !retired && stop.Err() == nil {
			w.op(history.Event{F: history.Release, Key: key, Token: acq.Token}, withStop(func(ctx context.Context) (history.Event, error) {
				return history.Event{}, c.Release(ctx, key)
			}))
		}
		c.Close()
		cancel()
	}
	return read, nil
}

// finalAcquire takes a final read's lock on key. The final reads start
// the moment the last fault is healed, and a server restarted by that
// heal may not serve yet: a JetStream cluster whose power was cut needs
// seconds to elect its leaders again, an etcd member to replay its log.
// An acquire the service refused outright (fail: nothing was granted)
// is tried again, each try an op of its own in the history, until one
// is granted, one's outcome is unknown (info: the process is retired,
// as in the workload), or finalReadWindow has passed since the first
// try. Every fault healed before the workload ended had the nemesis
// interval's rest before the next; without this, the last one had a
// single try, and a run held to a grant after each crash
// (--grant-after-each-crash) came out unknown only because its service
// was not given the time the others were.
func (w *worker) finalAcquire(stop context.Context, key string, acquire func(ctx context.Context) (history.Event, error)) (history.Event, bool) {
	giveUp := time.Now().Add(finalReadWindow(w.cfg))
	for {
		acq, ok, info := w.op(history.Event{F: history.Acquire, Key: key}, acquire)
		if ok || info || stop.Err() != nil {
			return acq, ok
		}
		wait := min(finalRetryWait, time.Until(giveUp))
		if wait <= 0 {
			return acq, false
		}
		select {
		case <-stop.Done():
			return acq, false
		case <-time.After(wait):
		}
	}
}

// finalRetryWait is the rest between a final read's refused acquire and
// its next try: short beside a service's recovery, long enough that a
// service refusing at once adds a few dozen ops to the history, not
// thousands.
const finalRetryWait = 250 * time.Millisecond

// finalReadWindow is how long a final read keeps trying for its lock:
// the time one try may take (the op timeout, and a lease left behind by
// the workload's last holder running out) plus the rest the schedule
// gives a healed fault before the next (--nemesis-interval), which is
// the time the service is meant to need to serve again.
func finalReadWindow(cfg *Config) time.Duration {
	return cfg.OpTimeout + cfg.LeaseTTL + cfg.NemesisInterval
}

// directRead is a final read's client whose read fencecheck takes itself,
// straight from the storage (the lock is still the client's): a storage
// the client writes with its own fence check holds what the client's
// writes left, whatever the client said about them.
type directRead struct {
	backends.Client
	read func(ctx context.Context, key string) (int64, error)
}

func (d directRead) Read(ctx context.Context, key string, _ uint64) (int64, error) {
	return d.read(ctx, key)
}

// processKey carries the history's process id to System.NewClient.
type processKey struct{}

func withProcess(ctx context.Context, p int) context.Context {
	return context.WithValue(ctx, processKey{}, p)
}

// processOf is the process id ctx carries, else the slot's first.
func processOf(ctx context.Context, slot int) int {
	if p, ok := ctx.Value(processKey{}).(int); ok {
		return p
	}
	return slot - 1
}
