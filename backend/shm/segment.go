package shm

import (
	"sync/atomic"
	"unsafe"
)

// A segment is the memory one process receives in: a control page, then
// one ring per process of the host (the one of the process's own index
// stays unused), ring i written by the host's process i. The process
// creates it (an anonymous memory file), and its peers map it once they
// proved they belong to the job (handshake.go).
//
// The control page holds the receiver's futex: sleeping says that its
// receiver goroutine is about to sleep or sleeps on bell; a producer
// that publishes a record and then sees sleeping set clears it (so that
// the producers after it, until the receiver sleeps again, make no
// system call), bumps bell and wakes it. The receiver sets sleeping before it looks at its rings a
// last time, and a producer publishes before it reads sleeping, so one
// of the two sees the other (both accesses are sequentially consistent
// atomics): no wake-up is lost.

// ctlSize is the control page's size.
const ctlSize = 4096

// Offsets in the control page, on cache lines of their own.
const (
	offSleeping = 0
	offBell     = cell
)

// segmentSize is the size of a segment of a host of procs processes
// whose rings hold ringSize bytes.
func segmentSize(procs, ringSize int) int { return ctlSize + procs*(ringHeader+ringSize) }

// segment is a mapped segment.
type segment struct {
	mem      []byte
	ringSize int
}

func (s *segment) sleeping() *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.mem[offSleeping]))
}

func (s *segment) bell() *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&s.mem[offBell])) }

// ring returns the ring that the host's process i writes in s.
func (s *segment) ring(i int) ring {
	off := ctlSize + i*(ringHeader+s.ringSize)
	return newRing(s.mem[off : off+ringHeader+s.ringSize])
}
