// Package bound holds a check to the time and memory it was given: a
// context that ends at a timeout, or when the heap reaches a limit, with
// the cause recorded (TimeoutError, MemoryError). It is the only part of
// the check that touches the process: it sets Go's memory limit, which
// every check running at once shares, and runs the watchdog that reads the
// heap. The checker itself (models) stays pure and only reads the
// context's cause.
package bound

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/units"
)

// TimeoutError ends a check that ran past its timeout (--check-timeout).
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the check timed out after %s (--check-timeout); raise it with --check-timeout %s",
		units.FormatDuration(e.Timeout), units.FormatDuration(max(6*e.Timeout, 30*time.Minute)))
}

// MemoryError ends a check whose heap reached its limit (--check-memory).
type MemoryError struct{ Limit int64 }

func (e *MemoryError) Error() string {
	return fmt.Sprintf("the check stopped at its memory bound of %s (--check-memory); raise it with --check-memory %s or check on a bigger machine",
		units.FormatBytes(e.Limit), units.FormatBytes(2*e.Limit))
}

// Context derives a check's context: cancelled at the timeout, at the
// memory limit (bytes of heap) or with its parent, with the cause
// recorded; 0 means no bound. done stops the watchdog and gives the memory
// limit back.
func Context(parent context.Context, timeout time.Duration, memoryLimit int64) (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancelCause(parent)
	var stops []func()
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { cancel(&TimeoutError{timeout}) })
		stops = append(stops, func() { t.Stop() })
	}
	if memoryLimit > 0 {
		stops = append(stops, watchMemory(ctx, cancel, memoryLimit))
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		stopped := context.Cause(ctx)
		cancel(nil)
		var me *MemoryError
		var te *TimeoutError
		if errors.As(stopped, &me) || errors.As(stopped, &te) {
			// What the check held is garbage now: hand it back.
			debug.FreeOSMemory()
		}
	}
}

// The Go memory limit is the process's: checks running at once share it,
// and the last to end restores what was there before.
var limits struct {
	sync.Mutex
	active map[*int64]int64
	before int64
}

func setLimit(key *int64, limit int64) {
	limits.Lock()
	defer limits.Unlock()
	if limits.active == nil {
		limits.active = map[*int64]int64{}
	}
	if len(limits.active) == 0 {
		limits.before = debug.SetMemoryLimit(-1)
	}
	limits.active[key] = limit
	applyLimit()
}

func clearLimit(key *int64) {
	limits.Lock()
	defer limits.Unlock()
	delete(limits.active, key)
	if len(limits.active) == 0 {
		debug.SetMemoryLimit(limits.before)
		return
	}
	applyLimit()
}

func applyLimit() {
	l := int64(-1)
	for _, v := range limits.active {
		if l < 0 || v < l {
			l = v
		}
	}
	if limits.before > 0 && limits.before < l {
		l = limits.before
	}
	debug.SetMemoryLimit(l)
}

// heapSample is the metric the watchdog reads: memory occupied by heap
// objects, live or not yet swept.
const heapSample = "/memory/classes/heap/objects:bytes"

// HeapBytes reads the metric the memory bound is held to.
func HeapBytes() int64 {
	s := []metrics.Sample{{Name: heapSample}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// watchMemory asks the garbage collector to keep the heap under the limit
// (it works harder as the heap nears it) and, should the objects still
// reach it, ends the check with a MemoryError.
func watchMemory(ctx context.Context, cancel context.CancelCauseFunc, limit int64) func() {
	key := new(int64)
	setLimit(key, limit)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if HeapBytes() >= limit {
				cancel(&MemoryError{Limit: limit})
				return
			}
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
		clearLimit(key)
	}
}
