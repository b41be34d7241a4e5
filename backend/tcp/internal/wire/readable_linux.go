package wire

import (
	"syscall"
	"unsafe"
)

// pollFd is struct pollfd.
type pollFd struct {
	fd             int32
	events, revent int16
}

const pollIn = 0x1

// readable reports whether the socket fd has something to read (bytes, its
// end, or an error), without blocking: ppoll with a zero timeout asks the
// socket's state without the socket lock that a read takes, which the
// kernel's delivery of the peer's next segment then waits for; a poll
// that reads an empty socket again and again contends with it
// (__pv_queued_spin_lock_slowpath was the first entry of the polling
// process's profile).
func readable(fd uintptr) bool {
	p := pollFd{fd: int32(fd), events: pollIn}
	var zero syscall.Timespec
	// Raw: a zero timeout never blocks.
	n, _, e := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	return e != 0 || n != 0
}
