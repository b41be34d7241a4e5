package buffer

// Stats is a snapshot of a [Pool]'s memory, from [Pool.Stats].
type Stats struct {
	// MinBlock and RegionSize repeat the pool's configuration.
	MinBlock, RegionSize int
	// Regions counts the buddy regions, Dedicated the regions of one
	// oversized block each; RegionBytes is the memory of both.
	Regions, Dedicated int
	RegionBytes        int64
	// InUse is the bytes of the blocks handed out (whole blocks, not the
	// lengths asked for), dedicated ones included.
	InUse int64
	// Cached is the bytes of freed blocks the shard caches hold
	// uncoalesced; [Pool.Trim] returns them to the free lists.
	Cached int64
	// Free[l] is the bytes of free blocks of level l, blocks of
	// MinBlock<<l bytes; len(Free) is [Pool.Levels]. A pool whose blocks
	// are all back and trimmed has Free[len(Free)-1] == RegionBytes.
	Free []int64
	// Gets and Puts count successful calls to [Pool.Get] and [Pool.Put]
	// ([Pool.Alloc] and [Buf.Free] included).
	Gets, Puts uint64
}

// Stats returns a snapshot of the pool's memory. It locks each shard in turn,
// so under concurrent use the figures of different shards are taken at
// slightly different moments. It is safe for concurrent use.
func (p *Pool) Stats() Stats {
	p.ready()
	s := Stats{
		MinBlock:   p.minBlock,
		RegionSize: p.regionSize,
		Free:       make([]int64, p.top+1),
	}
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		s.Gets += sh.gets
		s.Puts += sh.puts
		s.Cached += int64(sh.cachedBytes)
		for _, r := range sh.regions {
			s.Regions++
			s.RegionBytes += int64(r.size)
			s.InUse += int64(r.used)
			for l := range s.Free {
				s.Free[l] += int64(r.nfree[l]) * int64(p.minBlock<<l)
			}
		}
		sh.mu.Unlock()
	}
	p.mu.Lock()
	s.Dedicated = p.dedicated
	s.RegionBytes += int64(p.dedicatedBytes)
	s.InUse += int64(p.dedicatedBytes)
	s.Gets += p.dedicatedGets
	s.Puts += p.dedicatedPuts
	p.mu.Unlock()
	return s
}
