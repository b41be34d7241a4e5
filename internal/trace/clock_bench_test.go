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
	g := newRing(1<<12, 1)
	rec := Record{Op: OpSend}
	for i := 0; i < b.N; i++ {
		rec.Start = int64(i)
		g.add(&rec)
	}
}

// BenchmarkRankSent is a send's record, as the engine's hook writes it
// (without the clock reads, which BenchmarkClockSource weighs).
func BenchmarkRankSent(b *testing.B) {
	s, err := NewSet(1, nil, 0, Options{Trace: true, Events: 1 << 12})
	if err != nil {
		b.Fatal(err)
	}
	o := s.Rank(0)
	for i := 0; i < b.N; i++ {
		o.Sent(int64(i), int64(i)+1, 1, 0, 1, 1, 7, 8, false, false)
	}
}
