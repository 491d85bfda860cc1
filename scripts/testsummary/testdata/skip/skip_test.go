// Package skip is a fixture of testsummary's tests: a subtest that skips,
// beside one that passes.
package skip

import "testing"

func TestWithASkippedSubtest(t *testing.T) {
	t.Run("needs-a-thing", func(t *testing.T) { t.Skip("the thing is unavailable here") })
	t.Run("fine", func(t *testing.T) {})
}
