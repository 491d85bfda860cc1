// Package slots runs a numbered list of jobs on a fixed number of slots
// at once: the scheduling that `check compare --parallel` and `check
// --test-count --parallel` share. A slot is one job at a time — one run
// on its own cluster — and jobs are handed out in the order of their
// index, so that with one slot the order is exactly the sequential one.
//
// It knows nothing of runs, clusters or verdicts, and it never cancels a
// job it started: stopping means handing out no new job, and the jobs
// under way end as their own signals tell them to (an interrupted run
// heals, checks and reports as usual).
package slots

import "sync"

// Run calls do(slot, i) for every i in [0, jobs), at most width at once,
// handing the jobs out in order of i; slot is in [0, width) and no two
// jobs under way share one. Before each hand-out it asks stop: once that
// says true, no new job starts. Run returns when every job it started has
// ended, with how many it started. A width below 1 is 1.
func Run(jobs, width int, stop func() bool, do func(slot, i int)) int {
	width = max(1, min(width, jobs))
	free := make(chan int, width)
	for s := range width {
		free <- s
	}
	var wg sync.WaitGroup
	started := 0
	for i := range jobs {
		slot := <-free // wait for a slot before asking stop: a stop during the wait counts
		if stop != nil && stop() {
			free <- slot
			break
		}
		started++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { free <- slot }()
			do(slot, i)
		}()
	}
	wg.Wait()
	return started
}
