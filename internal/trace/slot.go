//go:build !race

package trace

// slot takes the next slot of g, for the caller, pinned to g's P, to
// fill: a hook writes its record in place, without a copy. Plain stores:
// the pinned goroutine is g's only writer.
func (g *ring) slot() *Record {
	i := g.next
	g.next = i + 1
	p := &g.buf[i&g.mask]
	if i > g.mask {
		g.dropped[p.Rank]++ // about to be overwritten
	}
	return p
}
