// Package killed is a fixture of testsummary's tests: a test whose process
// is killed under it (as the kernel's OOM killer would).
package killed

import (
	"syscall"
	"testing"
)

func TestKilledMidway(t *testing.T) {
	t.Log("the process is about to be killed")
	syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
}
