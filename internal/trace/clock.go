package trace

import (
	"time"
	_ "unsafe" // for go:linkname
)

// nanotime is the runtime's monotonic clock, in nanoseconds: what
// time.Since reads, without the wall clock time.Now reads beside it. The
// runtime keeps it reachable by linkname for packages that use it so.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Clock counts ticks from its creation: the processor's time-stamp
// counter where it is invariant (tsc_amd64.go), the runtime's nanotime
// elsewhere. BenchmarkClockSource weighs the choices; on the 2-core KVM
// test VM (clock source tsc), quiet, a read costs: RDTSC 9 ns, RDTSCP
// 18, LFENCE;RDTSC 16, nanotime (the vDSO's clock_gettime) 23,
// time.Since 25, time.Now 46, clock_gettime as a system call 186 (under
// load every figure grows, RDTSC's to 35 ns). Clock reads a plain RDTSC,
// which does not wait for earlier instructions: see the package
// documentation, Timestamps. Records hold ticks; Scale converts them, by
// the ratio of the two clocks over the clock's life so far.
type Clock struct {
	base  int64 // ticks at creation
	nbase int64 // nanotime at creation
}

// NewClock returns a clock that reads 0 now.
func NewClock() Clock { return Clock{base: ticks(), nbase: nanotime()} }

// Now returns the ticks since c was made.
func (c Clock) Now() int64 { return ticks() - c.base }

// calibrationTime is the least time over which Scale measures the ticks'
// rate: the error of the clock reads it takes is about 10⁻⁴ of it.
const calibrationTime = time.Millisecond

// Scale returns the nanoseconds a tick lasts (1 when ticks are
// nanoseconds), measured over c's life, which it first lets last
// calibrationTime.
func (c Clock) Scale() float64 {
	if !tickIsTSC {
		return 1
	}
	for nanotime()-c.nbase < int64(calibrationTime) {
		time.Sleep(time.Millisecond)
	}
	n, t := nanotime()-c.nbase, ticks()-c.base
	if t <= 0 {
		return 1
	}
	return float64(n) / float64(t)
}
