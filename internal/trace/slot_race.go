//go:build race

package trace

import "sync/atomic"

// slot is slot.go's, by atomic adds: the race detector does not know
// that a pinned goroutine is its P's only one, and would report the
// plain stores of two goroutines that ran on one P in turn.
func (g *ring) slot() *Record {
	i := atomic.AddUint64(&g.next, 1) - 1
	p := &g.buf[i&g.mask]
	if i > g.mask {
		atomic.AddUint64(&g.dropped[p.Rank], 1)
	}
	return p
}
