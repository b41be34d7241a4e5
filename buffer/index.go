package buffer

import (
	"slices"
	"sync/atomic"
)

// regionIndex finds the region that holds an address. Readers (every Put)
// load an immutable sorted snapshot and binary-search it: O(log regions),
// no lock, no allocation. Writers (region creation and release, rare)
// replace the snapshot under Pool.mu, copy on write.
type regionIndex struct {
	regions atomic.Pointer[[]*region] // sorted by base; never modified in place
}

// lookup returns the region whose memory holds address p, or nil.
func (x *regionIndex) lookup(p uintptr) *region {
	rp := x.regions.Load()
	if rp == nil {
		return nil
	}
	rs := *rp
	// Find the first region whose base is above p; the one before it is
	// the only candidate.
	lo, hi := 0, len(rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rs[m].base <= p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil
	}
	r := rs[lo-1]
	if p-r.base >= uintptr(r.size) {
		return nil
	}
	return r
}

// add publishes r. Pool.mu must be held.
func (x *regionIndex) add(r *region) {
	var old []*region
	if rp := x.regions.Load(); rp != nil {
		old = *rp
	}
	i, _ := slices.BinarySearchFunc(old, r.base, func(e *region, b uintptr) int {
		switch {
		case e.base < b:
			return -1
		case e.base > b:
			return 1
		}
		return 0
	})
	rs := make([]*region, 0, len(old)+1)
	rs = append(rs, old[:i]...)
	rs = append(rs, r)
	rs = append(rs, old[i:]...)
	x.regions.Store(&rs)
}

// remove unpublishes r. Pool.mu must be held.
func (x *regionIndex) remove(r *region) {
	rp := x.regions.Load()
	if rp == nil {
		return
	}
	old := *rp
	i := slices.Index(old, r)
	if i < 0 {
		return
	}
	rs := make([]*region, 0, len(old)-1)
	rs = append(rs, old[:i]...)
	rs = append(rs, old[i+1:]...)
	x.regions.Store(&rs)
}

// all returns the current snapshot (read only).
func (x *regionIndex) all() []*region {
	if rp := x.regions.Load(); rp != nil {
		return *rp
	}
	return nil
}
