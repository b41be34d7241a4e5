package shm

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// A segment is the memory one process receives in: a control page, then
// one ring per process of the host (the one of the process's own index
// stays unused), ring i written by the host's process i. The process
// creates it (an anonymous memory file), and its peers map it once they
// proved they belong to the job (handshake.go).
//
// The control page says whether the receiver sleeps: sleeping is set
// while its receiver goroutine is about to sleep or sleeps on its bell,
// an eventfd handed to the peers with the segment; a producer that
// publishes a record and then sees sleeping set clears it (so that the
// producers after it, until the receiver sleeps again, make no system
// call) and rings the bell. The receiver sets sleeping before it looks at
// its rings a last time, and a producer publishes before it reads
// sleeping, so one of the two sees the other (both accesses are
// sequentially consistent atomics); the eventfd keeps a ring until it is
// read: no wake-up is lost.
//
// It also holds the CPUs its process may run on (its affinity mask),
// written before any peer maps the segment and never again: the peers
// count the host's cores from them (Device.cores).
//
// And it holds the slots of its split reads (split_linux.go), a cache
// line each: a receiver of the process publishes a request in one, and
// the peer that it asked answers there.

// ctlSize is the control page's size.
const ctlSize = 4096

// Offsets in the control page, on cache lines of their own.
const (
	offSleeping = 0
	offCPUs     = 2 * cell // cpuWords words
	offSlots    = 1024     // splitSlots slots, a cache line each
)

// cpuWords is the length of a CPU mask in 64-bit words: 1024 CPUs, as
// the C library's cpu_set_t.
const cpuWords = 16

// cpuMask is a set of CPUs, bit i of word i/64 for CPU i.
type cpuMask [cpuWords]uint64

func (m *cpuMask) or(o cpuMask) {
	for i := range m {
		m[i] |= o[i]
	}
}

func (m *cpuMask) count() int {
	n := 0
	for _, w := range m {
		n += bits.OnesCount64(w)
	}
	return n
}

func (s *segment) cpuWord(i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&s.mem[offCPUs+8*i]))
}

// setCPUs writes m as the CPUs of s's process.
func (s *segment) setCPUs(m cpuMask) {
	for i, w := range m {
		s.cpuWord(i).Store(w)
	}
}

// cpus returns the CPUs of s's process.
func (s *segment) cpus() (m cpuMask) {
	for i := range m {
		m[i] = s.cpuWord(i).Load()
	}
	return m
}

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

// slot returns split-read slot i of s (i < splitSlots).
func (s *segment) slot(i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&s.mem[offSlots+i*cell]))
}

// ring returns the ring that the host's process i writes in s.
func (s *segment) ring(i int) ring {
	off := s.ringOffset(i)
	return newRing(s.mem[off : off+ringHeader+s.ringSize])
}

// ringOffset is where ring i starts in s.
func (s *segment) ringOffset(i int) int { return ctlSize + i*(ringHeader+s.ringSize) }
