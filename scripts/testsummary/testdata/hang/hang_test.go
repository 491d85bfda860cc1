// Package hang is a fixture of testsummary's tests: a test that hangs in
// a subtest until go test's -timeout ends its process.
package hang

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestHangs(t *testing.T) {
	t.Log("the parent starts its subtest")
	t.Run("waiting", func(t *testing.T) {
		t.Log("waiting for an answer that never comes")
		time.Sleep(time.Hour)
	})
}
