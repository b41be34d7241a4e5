package trace

import _ "unsafe" // for go:linkname

// procPin pins the calling goroutine to its P (no preemption, no
// migration) and returns the P's number; procUnpin releases it. The
// runtime keeps both reachable by linkname (sync.Pool's pin), for the
// packages that use them so.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// rings are a set's rings, by P number; nil where no goroutine recorded
// on that P yet.
type rings []*ring

// write fills a slot of the ring of the calling goroutine's P with
// rank's point-to-point record, pinned: the P's one writer.
func (s *Set) write(rank int, start, end int64, ctx uint64, bytes, src, dst, dstWorld, tag int, op Op, flags uint8) {
	g := s.pin()
	g.slot().set(rank, start, end, ctx, bytes, src, dst, dstWorld, tag, op, flags)
	procUnpin()
}

// writeRecord is write for a whole record (a collective's).
func (s *Set) writeRecord(rec *Record) {
	g := s.pin()
	*g.slot() = *rec
	procUnpin()
}

// pin pins the calling goroutine to its P and returns the P's ring,
// which it makes on the P's first record.
func (s *Set) pin() *ring {
	for {
		p := procPin()
		if rs := *s.rings.Load(); p < len(rs) && rs[p] != nil {
			return rs[p]
		}
		procUnpin() // the lock may wait: not pinned
		s.makeRing(p)
	}
}

// makeRing makes the ring of P number p, unless another goroutine did.
func (s *Set) makeRing(p int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.rings.Load()
	if p < len(old) && old[p] != nil {
		return
	}
	rs := make(rings, max(len(old), p+1))
	copy(rs, old)
	rs[p] = newRing(s.ringSize, len(s.ranks))
	s.rings.Store(&rs)
}

// allRings returns the rings made so far.
func (s *Set) allRings() rings { return *s.rings.Load() }
