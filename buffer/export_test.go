package buffer

import (
	"fmt"
	"slices"
)

// CheckInvariants verifies every invariant of the pool's metadata (see
// region.go) and returns the first violation found.
func CheckInvariants(p *Pool) error {
	indexed := p.index.all()
	seen := 0
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		err := checkShard(p, sh, indexed)
		seen += len(sh.regions)
		sh.mu.Unlock()
		if err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
	}
	p.mu.Lock()
	seen += p.dedicated
	p.mu.Unlock()
	if seen != len(indexed) {
		return fmt.Errorf("index holds %d regions, shards and dedicated %d", len(indexed), seen)
	}
	for i := 1; i < len(indexed); i++ {
		if indexed[i-1].base+uintptr(indexed[i-1].size) > indexed[i].base {
			return fmt.Errorf("index not sorted or regions overlap at %d", i)
		}
	}
	return nil
}

func checkShard(p *Pool, sh *shard, indexed []*region) error {
	cachedBytes := 0
	incache := map[blockRef]int{}
	for l := range sh.cache {
		c := &sh.cache[l]
		for _, ref := range c.refs[:c.n] {
			if ref.r.owner != sh {
				return fmt.Errorf("cache level %d holds a block of another shard", l)
			}
			if ref.r.state[ref.idx] != stCached|uint8(l) {
				return fmt.Errorf("cache level %d: block %d has state %#x", l, ref.idx, ref.r.state[ref.idx])
			}
			if _, dup := incache[ref]; dup {
				return fmt.Errorf("block %d cached twice", ref.idx)
			}
			incache[ref] = l
			cachedBytes += p.minBlock << l
		}
	}
	if cachedBytes != sh.cachedBytes {
		return fmt.Errorf("cachedBytes %d, cache holds %d", sh.cachedBytes, cachedBytes)
	}
	for _, r := range sh.regions {
		if r.released || r.owner != sh {
			return fmt.Errorf("region %#x released or foreign", r.base)
		}
		if !slices.Contains(indexed, r) {
			return fmt.Errorf("region %#x not indexed", r.base)
		}
		if err := checkRegion(p, r, incache); err != nil {
			return fmt.Errorf("region %#x: %w", r.base, err)
		}
	}
	return nil
}

func checkRegion(p *Pool, r *region, incache map[blockRef]int) error {
	var nfree [maxLevels]int32
	used, nused, cached := 0, 0, 0
	for idx := int32(0); int(idx) < len(r.state); {
		st := r.state[idx]
		kind, l := st&stKindMask, int(st&stLevel)
		if kind == stInterior {
			return fmt.Errorf("block %d: interior where a block must start", idx)
		}
		if l > r.top || int(idx)&(1<<l-1) != 0 {
			return fmt.Errorf("block %d: level %d misaligned", idx, l)
		}
		for j := idx + 1; j < idx+1<<l; j++ {
			if r.state[j] != stInterior {
				return fmt.Errorf("block %d level %d: min block %d has state %#x", idx, l, j, r.state[j])
			}
		}
		bs := p.minBlock << l
		switch kind {
		case stUsed:
			used += bs
			nused++
		case stCached:
			cached += bs
			if cl, ok := incache[blockRef{r, idx}]; !ok || cl != l {
				return fmt.Errorf("block %d cached but not in the cache", idx)
			}
		case stFree:
			nfree[l]++
			if l < r.top && r.state[idx^1<<l] == stFree|uint8(l) {
				return fmt.Errorf("block %d level %d: free buddies not merged", idx, l)
			}
		default:
			return fmt.Errorf("block %d: bad state %#x", idx, st)
		}
		idx += 1 << l
	}
	if used != r.used || nused != r.nused || cached != r.cached {
		return fmt.Errorf("counters used %d/%d nused %d/%d cached %d/%d", r.used, used, r.nused, nused, r.cached, cached)
	}
	for l := 0; l <= r.top; l++ {
		n := int32(0)
		prev := int32(nilBlock)
		for idx := r.head[l]; idx != nilBlock; idx = r.link[idx].next {
			if r.state[idx] != stFree|uint8(l) {
				return fmt.Errorf("list %d holds block %d of state %#x", l, idx, r.state[idx])
			}
			if r.link[idx].prev != prev {
				return fmt.Errorf("list %d: block %d has prev %d, want %d", l, idx, r.link[idx].prev, prev)
			}
			prev = idx
			n++
			if n > int32(len(r.state)) {
				return fmt.Errorf("list %d: cycle", l)
			}
		}
		if n != nfree[l] || n != r.nfree[l] {
			return fmt.Errorf("list %d: %d blocks, %d free in state, nfree %d", l, n, nfree[l], r.nfree[l])
		}
		if (r.avail>>l&1 == 1) != (n > 0) {
			return fmt.Errorf("avail bit %d wrong", l)
		}
	}
	if r.counted && !r.empty() {
		return fmt.Errorf("counted as empty but not empty")
	}
	return nil
}

// Coalesced reports whether every buddy region of p is one free block.
func Coalesced(p *Pool) bool {
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		ok := true
		for _, r := range sh.regions {
			ok = ok && r.empty()
		}
		sh.mu.Unlock()
		if !ok {
			return false
		}
	}
	return true
}

// Shards returns the number of shards of p.
func Shards(p *Pool) int { return len(p.shards) }
