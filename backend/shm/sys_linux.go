//go:build linux && (amd64 || arm64)

package shm

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// The system calls the device is made of, through package syscall (no
// cgo): memfd_create and mmap for the segments, an eventfd a receiver
// sleeps on, process_vm_readv (cross-memory attach) for the single copy
// of a large message.

// eventfd makes a non-blocking eventfd, closed on exec: the bell of this
// process's receiver loop (segment.go), returned as a file that the Go
// runtime's poller waits on, and its descriptor.
func eventfd() (*os.File, int, error) {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil, -1, fmt.Errorf("eventfd: %w", errno)
	}
	f := os.NewFile(fd, "mpgo-shm-bell")
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		// Not in the poller: a read would not wait, and the loop would
		// spin instead of sleeping.
		f.Close()
		return nil, -1, fmt.Errorf("eventfd: the runtime's poller does not take it: %w", err)
	}
	return f, int(fd), nil
}

// memfd makes an anonymous memory file of size bytes, zero-filled, closed
// on exec and readable by its owner alone (mode 0600: only the /proc
// links of the processes that hold it name it, and those need ptrace
// rights on them): it has no name in any file system, so nothing of it
// outlives the processes that hold it. name shows in /proc/<pid>/maps.
func memfd(name string, size int) (int, error) {
	b := append([]byte(name), 0)
	fd, _, errno := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&b[0])), 1 /* MFD_CLOEXEC */, 0)
	if errno != 0 {
		return -1, fmt.Errorf("memfd_create: %w", errno)
	}
	if err := syscall.Fchmod(int(fd), 0o600); err != nil {
		syscall.Close(int(fd))
		return -1, fmt.Errorf("fchmod: %w", err)
	}
	if err := syscall.Ftruncate(int(fd), int64(size)); err != nil {
		syscall.Close(int(fd))
		return -1, fmt.Errorf("ftruncate: %w", err)
	}
	return int(fd), nil
}

// mapShared maps size bytes of the memory file fd, shared, readable and
// writable.
func mapShared(fd, size int) ([]byte, error) {
	m, err := syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return m, nil
}

// readFrom copies len(dst) bytes at address addr of process pid into dst
// (process_vm_readv: one copy, by the kernel, between the two address
// spaces). Errors are the system call's errno: EPERM where the kernel
// does not allow it (ptrace scope, a container's seccomp filter), ESRCH
// when pid is gone.
func readFrom(pid int, dst []byte, addr uintptr) error {
	return vmCopy(sysProcessVMReadv, pid, dst, addr)
}

// writeTo copies src to address addr of process pid (process_vm_writev:
// one copy, by the kernel). Errors as readFrom's.
func writeTo(pid int, src []byte, addr uintptr) error {
	return vmCopy(sysProcessVMWritev, pid, src, addr)
}

// vmCopy is readFrom (nr process_vm_readv) or writeTo (process_vm_writev)
// of local, this process's, and the bytes at addr of process pid.
func vmCopy(nr uintptr, pid int, local []byte, addr uintptr) error {
	for len(local) > 0 {
		l := iovec{base: uintptr(unsafe.Pointer(&local[0])), len: uint64(len(local))}
		r := iovec{base: addr, len: uint64(len(local))}
		n, _, errno := syscall.Syscall6(nr, uintptr(pid), uintptr(unsafe.Pointer(&l)), 1, uintptr(unsafe.Pointer(&r)), 1, 0)
		runtime.KeepAlive(local)
		if errno != 0 {
			return errno
		}
		if n == 0 {
			return syscall.EFAULT
		}
		local, addr = local[n:], addr+n
	}
	return nil
}

// iovec is struct iovec of a 64-bit Linux: base is an address in one
// process or the other, never dereferenced by Go.
type iovec struct {
	base uintptr
	len  uint64
}

// affinity returns the CPUs this process may run on (sched_getaffinity);
// where the system call fails, as many as the Go runtime counts.
func affinity() cpuMask {
	var m cpuMask
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m[0])))
	if errno != 0 {
		m = cpuMask{}
		for i := range min(runtime.NumCPU(), cpuWords*64) {
			m[i/64] |= 1 << (i % 64)
		}
	}
	return m
}

// yieldCore gives this thread's core to another runnable thread, if any
// (sched_yield). A raw system call: it returns within a time slice, and
// the calling goroutine keeps its P, as it goes on polling.
func yieldCore() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault a range's
// pages in, writable, at once.
const madvPopulateWrite = 23

// populateBudget bounds the ring memory a process populates at attach:
// the two rings of each peer (the one it writes, the one it reads) for
// up to 16 processes a host with the default rings. Beyond that the
// rings fault in as they are used, which a ring that carries little
// traffic never does past its first pages, where populating them all
// would commit the host's whole ring memory, procs² rings, at once.
const populateBudget = 16 << 20

// populate faults in the pages of ring i of s (populate).
func (s *segment) populate(i int) { populate(s.mem, s.ringOffset(i), ringHeader+s.ringSize) }

// populate faults in the pages of mem that hold its n bytes at off,
// writable, so that a ring's first pass does not take a page fault every
// page on both sides: the first 1,000 round trips of 512 bytes under
// mpiexec -n 2 took 1.5-1.8 us a round trip, against 0.3 once the rings
// had been round (0.3-1.2 populated). Where the kernel is older, the
// pages fault in as they are first used, as without it.
func populate(mem []byte, off, n int) {
	page := syscall.Getpagesize()
	start, end := off&^(page-1), min(len(mem), (off+n+page-1)&^(page-1))
	syscall.Madvise(mem[start:end], madvPopulateWrite) //nolint:errcheck // see above
}
