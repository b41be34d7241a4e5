package buffer

import "sync"

// A shard is one lock of the pool together with the regions it guards and a
// small cache of freed blocks. Striping the pool across shards keeps
// goroutines that run at the same time on different Ps off each other's
// locks: Get starts at the shard its P last used (see [hint]) and moves on
// to the next whose lock is free; Put goes to the shard that owns the
// block's region.
//
// The cache defers coalescing, as in the lazy buddy system (Barkley and Lee,
// 1989): a freed block of a level whose cache has room is kept whole,
// marked stCached, and handed straight out by the next Get of that level,
// saving a cascade of splits and merges per pair. Caches are bounded
// (cacheSlots blocks per level, Pool.cacheLimit bytes per shard) and are
// flushed back into the buddy lists before a shard grows by a region, by
// [Pool.Trim] and by [Pool.Close].
type shard struct {
	mu sync.Mutex
	id int // position in Pool.shards; immutable

	// Guarded by mu.
	gets, puts  uint64
	cachedBytes int
	regions     []*region // buddy regions, oldest first (first fit)
	cache       [maxLevels]levelCache

	// Keep the next shard's lock off this shard's last cache line.
	_ [cacheLinePad]byte
}

// cacheLinePad is the size of a cache line on the machines mpgo runs on
// (x86-64, arm64), used to keep shards' locks apart (false sharing).
const cacheLinePad = 64

// cacheSlots is how many freed blocks of one level a shard keeps
// uncoalesced.
const cacheSlots = 8

// levelCache is a LIFO of freed blocks of one level (the last freed is the
// warmest in the CPU cache).
type levelCache struct {
	n    int
	refs [cacheSlots]blockRef
}

// blockRef names block idx (in minimum blocks) of region r.
type blockRef struct {
	r   *region
	idx int32
}

// hint carries the shard a P used last. The pool keeps hints in a
// sync.Pool, whose per-P private slot gives each P its own hint at the cost
// of an uncontended pin and unpin; a hint lost to a garbage collection is
// simply made again. Hints only steer: correctness rests on the shard locks.
type hint struct{ shard int }
