// Package gopanic is a fixture of testsummary's tests: a test whose
// goroutine panics, which ends the test process.
package gopanic

import (
	"testing"
	"time"
)

func TestPanicsInAGoroutine(t *testing.T) {
	t.Log("starting a goroutine that panics")
	go func() { panic("the goroutine found nil where a lease should be") }()
	time.Sleep(time.Minute)
}
