package models

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TimeoutError ends a check that ran past Options.Timeout.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the check timed out after %s (--check-timeout); raise it with --check-timeout %s",
		FormatDuration(e.Timeout), FormatDuration(max(6*e.Timeout, 30*time.Minute)))
}

// MemoryError ends a check whose heap reached Options.MemoryLimit.
type MemoryError struct{ Limit int64 }

func (e *MemoryError) Error() string {
	return fmt.Sprintf("the check stopped at its memory bound of %s (--check-memory); raise it with --check-memory %s or check on a bigger machine",
		FormatBytes(e.Limit), FormatBytes(2*e.Limit))
}

// stopMessage says why a check stopped, in the words a user needs.
func stopMessage(cause error) string {
	var te *TimeoutError
	var me *MemoryError
	switch {
	case errors.As(cause, &te), errors.As(cause, &me):
		return cause.Error()
	case errors.Is(cause, errTooConcurrent):
		return cause.Error()
	}
	return "the check was interrupted"
}

// FormatDuration writes d the way a flag takes it, without zero units:
// 5m, 1h30m, 90s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// FormatBytes writes n the way --check-memory takes it: 12GiB, 1.5GiB,
// 512MiB.
func FormatBytes(n int64) string {
	const (
		kib = 1 << 10
		mib = 1 << 20
		gib = 1 << 30
	)
	switch {
	case n >= gib && n%gib == 0:
		return strconv.FormatInt(n/gib, 10) + "GiB"
	case n >= gib:
		return strconv.FormatFloat(float64(n*10/gib)/10, 'f', -1, 64) + "GiB"
	case n >= mib:
		return strconv.FormatInt(n/mib, 10) + "MiB"
	case n >= kib:
		return strconv.FormatInt(n/kib, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// ParseBytes reads a size as --check-memory takes it: a number with an
// optional unit B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB, also powers of
// 1024; K, M, G, T alike).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
		"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 {
		return 0, fmt.Errorf("%q is not a size: give a number and a unit, e.g. 512MiB or 12GiB", s)
	}
	n := v * mult
	if n > 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}

// bound derives the check's context: cancelled at the timeout, at the
// memory limit or with its parent, with the cause recorded. done stops the
// watchdog and gives the memory limit back.
func (opts *Options) bound(parent context.Context) (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancelCause(parent)
	var stops []func()
	if opts.Timeout > 0 {
		t := time.AfterFunc(opts.Timeout, func() { cancel(&TimeoutError{opts.Timeout}) })
		stops = append(stops, func() { t.Stop() })
	}
	if opts.MemoryLimit > 0 {
		stops = append(stops, watchMemory(ctx, cancel, opts.MemoryLimit))
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
