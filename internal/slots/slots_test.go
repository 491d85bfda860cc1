package slots

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every job runs once, never more than width at once, no slot held by two
// jobs at the same time, and jobs start in order of their index.
func TestRunWidthAndOrder(t *testing.T) {
	for _, width := range []int{1, 2, 3, 8} {
		var mu sync.Mutex
		var order []int
		var inFlight, most atomic.Int32
		held := make([]atomic.Bool, width)
		n := Run(10, width, nil, func(slot, i int) {
			if held[slot].Swap(true) {
				t.Errorf("width %d: slot %d handed out twice at once", width, slot)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			now := inFlight.Add(1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			time.Sleep(time.Duration(1+i%3) * time.Millisecond)
			inFlight.Add(-1)
			held[slot].Store(false)
		})
		if n != 10 || len(order) != 10 {
			t.Fatalf("width %d: started %d, ran %v", width, n, order)
		}
		if int(most.Load()) > width {
			t.Errorf("width %d: %d jobs at once", width, most.Load())
		}
		if width == 1 && !slices.IsSorted(order) {
			t.Errorf("one slot ran out of order: %v", order)
		}
		if width > 1 && most.Load() < 2 {
			t.Errorf("width %d never ran two jobs at once", width)
		}
	}
}

// After stop says true no new job starts; the ones under way finish.
func TestRunStop(t *testing.T) {
	var stopped atomic.Bool
	var finished atomic.Int32
	n := Run(20, 2, stopped.Load, func(slot, i int) {
		if i == 3 {
			stopped.Store(true)
		}
		time.Sleep(2 * time.Millisecond)
		finished.Add(1)
	})
	if n < 4 || n > 5 {
		t.Errorf("started %d jobs, want 4 or 5 (job 3 stops the hand-out; one more may be under way)", n)
	}
	if int(finished.Load()) != n {
		t.Errorf("%d started but %d finished: Run returned before its jobs ended", n, finished.Load())
	}
}

func TestRunNarrow(t *testing.T) {
	if n := Run(0, 4, nil, func(int, int) { t.Error("no job to run") }); n != 0 {
		t.Errorf("started %d of 0", n)
	}
	if n := Run(3, 0, nil, func(slot, _ int) {
		if slot != 0 {
			t.Errorf("width 0 is one slot, got slot %d", slot)
		}
	}); n != 3 {
		t.Errorf("started %d of 3", n)
	}
}
