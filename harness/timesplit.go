package harness

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// timeMarks are the moments a run's phases began. The last line of
// check.log splits the run's wall time by them, so that what a run costs
// beyond its workload (cluster up, servers ready, final reads, teardown,
// check, report) can be read off any run rather than guessed.
type timeMarks struct {
	mu    sync.Mutex
	marks []timeMark
}

type timeMark struct {
	name string
	at   time.Time
}

// mark notes that phase name begins now.
func (m *timeMarks) mark(name string) { m.markAt(name, time.Now()) }

func (m *timeMarks) markAt(name string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.marks = append(m.marks, timeMark{name, at})
}

// split says where the time from start to end went, phase by phase in
// the order they began (the time before the first phase is "open": the
// run's directory, log and checks), and how much of it was not the
// workload.
func (m *timeMarks) split(start, end time.Time) string {
	m.mu.Lock()
	marks := append([]timeMark{{"open", start}}, m.marks...)
	m.mu.Unlock()
	var parts []string
	var workload time.Duration
	for i, mk := range marks {
		until := end
		if i+1 < len(marks) {
			until = marks[i+1].at
		}
		d := until.Sub(mk.at)
		if mk.name == "workload" {
			workload += d
		}
		parts = append(parts, fmt.Sprintf("%s %.1f s", mk.name, d.Seconds()))
	}
	total := end.Sub(start)
	return fmt.Sprintf("where the time went: %.1f s in all, %.1f s beyond the workload: %s",
		total.Seconds(), (total - workload).Seconds(), strings.Join(parts, ", "))
}

// length is how long the phases named name lasted in all, each until the
// next phase began (the last until end): the workload's own minutes, which
// a rate of exposures is per.
func (m *timeMarks) length(name string, end time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var d time.Duration
	for i, mk := range m.marks {
		if mk.name != name {
			continue
		}
		until := end
		if i+1 < len(m.marks) {
			until = m.marks[i+1].at
		}
		d += until.Sub(mk.at)
	}
	return d
}
