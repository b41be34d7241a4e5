package trace

import (
	"sync"
	"sync/atomic"
)

// stream is one stream of a recording log: values appended by any
// goroutine of the rank without a lock. A writer takes a slot by one
// atomic add and writes it in a chunk of chunkLen values; chunks never
// move, and the table that lists them is replaced, not changed, when it
// grows (under mu, once per chunk). Values are read once the writers are
// done (values), or by set, which writes one slot under its caller's
// lock.
type stream struct {
	n      atomic.Int64
	mu     sync.Mutex                         // serialises growing the table
	chunks atomic.Pointer[[]*[chunkLen]int32] // the table, copied on growth
}

const (
	chunkBits = 12
	chunkLen  = 1 << chunkBits
)

// add appends v and returns its index.
func (s *stream) add(v int32) int {
	i := s.n.Add(1) - 1
	*s.slot(i) = v
	return int(i)
}

// set writes v at index i, which add returned.
func (s *stream) set(i int, v int32) { *s.slot(int64(i)) = v }

// slot returns where the value of index i goes, making its chunk if
// needed.
func (s *stream) slot(i int64) *int32 {
	c := int(i >> chunkBits)
	if t := s.chunks.Load(); t != nil && c < len(*t) && (*t)[c] != nil {
		return &(*t)[c][i&(chunkLen-1)]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var t []*[chunkLen]int32
	if old := s.chunks.Load(); old != nil {
		t = *old
	}
	if c >= len(t) || t[c] == nil {
		grown := make([]*[chunkLen]int32, max(len(t), c+1))
		copy(grown, t)
		grown[c] = new([chunkLen]int32)
		s.chunks.Store(&grown)
		t = grown
	}
	return &t[c][i&(chunkLen-1)]
}

// values returns the stream's values, in order. Call it once the writers
// are done.
func (s *stream) values() []int32 {
	n := int(s.n.Load())
	out := make([]int32, 0, n)
	if t := s.chunks.Load(); t != nil {
		for c := 0; len(out) < n; c++ {
			out = append(out, (*t)[c][:min(chunkLen, n-len(out))]...)
		}
	}
	return out
}
