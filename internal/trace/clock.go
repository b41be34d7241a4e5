package trace

import (
	_ "unsafe" // for go:linkname
)

// nanotime is the runtime's monotonic clock, in nanoseconds: what
// time.Since reads, without the wall clock time.Now reads beside it (a
// vDSO call less per timestamp). The runtime keeps it reachable by
// linkname for packages that use it so.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Clock is a monotonic clock that counts from its creation.
type Clock struct{ base int64 }

// NewClock returns a clock that reads 0 now.
func NewClock() Clock { return Clock{base: nanotime()} }

// Now returns the nanoseconds since c was made.
func (c Clock) Now() int64 { return nanotime() - c.base }
