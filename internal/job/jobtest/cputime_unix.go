//go:build unix

package jobtest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime returns the CPU time this process has used (user and system):
// what the tests that check idle processes burn no core compare across a
// wait.
func CPUTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
