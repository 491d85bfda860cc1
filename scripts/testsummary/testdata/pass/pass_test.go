// Package pass is a fixture of testsummary's tests: a test that passes.
package pass

import "testing"

func TestPasses(t *testing.T) { t.Log("chatter of a passing test") }
