package trace

import (
	"testing"
	"time"
)

// clockSource is a way to read a clock, in its own units.
type clockSource struct {
	name string
	read func() int64
}

// clockSources are what BenchmarkClockSource compares: the runtime's
// monotonic clock (a vDSO clock_gettime on Linux), time.Now (that and the
// wall clock), time.Since, and Clock itself; clock_source_linux_test.go
// adds clock_gettime as a system call, clock_source_amd64_test.go the
// time-stamp counter's reads.
var clockSources = []clockSource{
	{"clock", func() int64 { return benchClock.Now() }},
	{"nanotime", nanotime},
	{"time.Now", func() int64 { return time.Now().UnixNano() }},
	{"time.Since", func() int64 { return int64(time.Since(benchStart)) }},
}

var (
	benchClock = NewClock()
	benchStart = time.Now()
)

// BenchmarkClockSource is the cost of one read of each clock source, in
// ns/op: what a record's time stamp costs on this machine.
func BenchmarkClockSource(b *testing.B) {
	for _, cs := range clockSources {
		b.Run(cs.name, func(b *testing.B) {
			var s int64
			for range b.N {
				s += cs.read()
			}
			sink = s
		})
	}
}

var sink int64
