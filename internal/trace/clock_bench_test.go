package trace

import (
	"testing"
)

func BenchmarkClock(b *testing.B) {
	c := NewClock()
	var s int64
	for i := 0; i < b.N; i++ {
		s += c.Now()
	}
	_ = s
}

func BenchmarkRingAdd(b *testing.B) {
	g := newRing(1 << 12)
	rec := Record{Op: OpSend}
	for i := 0; i < b.N; i++ {
		rec.Start = int64(i)
		g.add(&rec)
	}
}
