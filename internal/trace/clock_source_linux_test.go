package trace

import (
	"syscall"
	"unsafe"
)

// clock_gettime(CLOCK_MONOTONIC) as a system call, beside the vDSO's that
// nanotime makes: what a read costs where the vDSO falls back to the
// kernel (a VM whose clock source is not the TSC).
func init() {
	clockSources = append(clockSources, clockSource{"clock_gettime-syscall", func() int64 {
		var ts syscall.Timespec
		syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
		return ts.Nano()
	}})
}
