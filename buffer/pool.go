package buffer

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Pool defaults.
const (
	// DefaultRegionSize is the size of a region unless [WithRegionSize]
	// says otherwise: 8 MiB.
	DefaultRegionSize = 8 << 20
	// DefaultMinBlock is the smallest block unless [WithMinBlock] says
	// otherwise: 128 bytes.
	DefaultMinBlock = 128
	// DefaultRetainRegions is how many empty regions a pool keeps for reuse
	// unless [WithRetainRegions] says otherwise.
	DefaultRetainRegions = 2
	// MaxAlloc is the largest request [Pool.Get] accepts: 1 TiB.
	MaxAlloc = 1 << 40

	maxRegionSize = 1 << 30 // 1 GiB
	maxMinBlocks  = 1 << 24 // minimum blocks per region: bounds metadata
	maxShards     = 256
)

// Pool is a concurrent buddy allocator of byte blocks (Knuth, TAOCP vol. 1,
// 2.5), the memory manager behind mpgo's pooled message buffers, after the
// buffering layer of MPJ Express (mpjbuf).
//
// Memory comes in regions (8 MiB by default) split into power-of-two blocks
// from the minimum block (128 bytes by default) up to the whole region, one
// level per size. [Pool.Get] hands out the first free block of the smallest
// level that fits, splitting larger ones; [Pool.Put] merges a freed block
// with its buddy for as long as the buddy is free. A request larger than a
// region gets a dedicated region of its own, released when it is put back.
// Regions come from the Go heap, or with [WithOffHeap] from mmap, outside
// the heap.
//
// A Pool is safe for concurrent use by many goroutines. It is striped across
// several locks (shards), each with a small cache of freed blocks, so that
// goroutines running at the same time rarely meet.
//
// Blocks are not zeroed: Get returns memory holding whatever its last user
// wrote. A slice must not be used after it has been put back (off-heap, its
// memory may be unmapped: using it faults).
//
// The zero Pool is ready to use, with the default configuration; [NewPool]
// makes one configured by options. A Pool must not be copied after first
// use.
type Pool struct {
	regionSize int
	minBlock   int
	minShift   uint // log2(minBlock)
	top        int  // level of a whole region
	retain     int
	offHeap    bool
	pageSize   int
	cacheLimit int // bytes a shard may hold in its cache

	once     sync.Once // init, by NewPool or on the zero Pool's first use
	shards   []shard
	mask     int // len(shards)-1
	hints    sync.Pool
	nextHint atomic.Uint32
	index    regionIndex
	empty    atomic.Int32 // regions kept empty for reuse (region.counted)
	closed   atomic.Bool

	mu sync.Mutex // guards the index writers and the dedicated counters below
	// Guarded by mu.
	dedicated      int // live dedicated regions
	dedicatedBytes int
	dedicatedGets  uint64
	dedicatedPuts  uint64
}

// Option configures a [Pool]; see [NewPool].
type Option func(*poolConfig)

type poolConfig struct {
	regionSize, minBlock, retain, shards int
	offHeap                              bool
}

// WithRegionSize sets the size of a region in bytes, a power of two from the
// minimum block up to 1 GiB (default [DefaultRegionSize]). Requests larger
// than a region get a dedicated region each. Off-heap regions must be at
// least a page.
func WithRegionSize(bytes int) Option { return func(c *poolConfig) { c.regionSize = bytes } }

// WithMinBlock sets the smallest block in bytes, a power of two of at least
// 8 (default [DefaultMinBlock]); smaller requests round up to it. A region
// holds at most 2^24 minimum blocks. Metadata costs 9 bytes per minimum
// block of region (7% at 128 bytes).
func WithMinBlock(bytes int) Option { return func(c *poolConfig) { c.minBlock = bytes } }

// WithRetainRegions sets how many empty regions the pool keeps for reuse
// (default [DefaultRetainRegions]); a region that becomes empty beyond that
// number is released to the Go heap or unmapped.
func WithRetainRegions(n int) Option { return func(c *poolConfig) { c.retain = n } }

// WithOffHeap takes regions from anonymous private mmap instead of the Go
// heap when on is true: page-aligned memory the garbage collector never
// moves or scans, which a network card can register. It is munmapped when
// its region is released and by [Pool.Close]. Where there is no mmap,
// [NewPool] fails with [ErrNotSupported].
func WithOffHeap(on bool) Option { return func(c *poolConfig) { c.offHeap = on } }

// WithShards sets how many locks the pool is striped across, rounded up to
// a power of two, at most 256 (default: GOMAXPROCS at creation, rounded up).
// Each shard grows its own regions, so more shards trade memory for less
// contention.
func WithShards(n int) Option { return func(c *poolConfig) { c.shards = n } }

// NewPool returns an empty pool configured by opts; it takes no memory until
// the first Get. Invalid options return an error wrapping [ErrInvalid].
func NewPool(opts ...Option) (*Pool, error) {
	c := defaultPoolConfig()
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	p := &Pool{}
	p.once.Do(func() { p.init(c) })
	return p, nil
}

func defaultPoolConfig() poolConfig {
	return poolConfig{
		regionSize: DefaultRegionSize,
		minBlock:   DefaultMinBlock,
		retain:     DefaultRetainRegions,
		shards:     min(runtime.GOMAXPROCS(0), maxShards),
	}
}

func (c poolConfig) validate() error {
	page := os.Getpagesize()
	switch {
	case c.minBlock < 8 || !isPow2(c.minBlock):
		return fmt.Errorf("buffer: min block %d: not a power of two ≥ 8: %w", c.minBlock, ErrInvalid)
	case c.regionSize < c.minBlock || c.regionSize > maxRegionSize || !isPow2(c.regionSize):
		return fmt.Errorf("buffer: region size %d: not a power of two in [min block %d, %d]: %w",
			c.regionSize, c.minBlock, maxRegionSize, ErrInvalid)
	case c.regionSize/c.minBlock > maxMinBlocks:
		return fmt.Errorf("buffer: region size %d / min block %d exceeds %d blocks: %w",
			c.regionSize, c.minBlock, maxMinBlocks, ErrInvalid)
	case c.retain < 0:
		return fmt.Errorf("buffer: retain %d regions: negative: %w", c.retain, ErrInvalid)
	case c.shards < 1 || c.shards > maxShards:
		return fmt.Errorf("buffer: %d shards: not in [1, %d]: %w", c.shards, maxShards, ErrInvalid)
	case c.offHeap && !offHeapSupported:
		return fmt.Errorf("buffer: off-heap regions: %w", ErrNotSupported)
	case c.offHeap && c.regionSize < page:
		return fmt.Errorf("buffer: off-heap region size %d: below the page size %d: %w", c.regionSize, page, ErrInvalid)
	}
	return nil
}

// init sets p up from the valid configuration c.
func (p *Pool) init(c poolConfig) {
	nshards := 1 << bits.Len(uint(c.shards-1))
	p.regionSize = c.regionSize
	p.minBlock = c.minBlock
	p.minShift = uint(bits.TrailingZeros(uint(c.minBlock)))
	p.top = bits.TrailingZeros(uint(c.regionSize)) - int(p.minShift)
	p.retain = c.retain
	p.offHeap = c.offHeap
	p.pageSize = os.Getpagesize()
	p.cacheLimit = max(c.regionSize/4, c.minBlock)
	p.shards = make([]shard, nshards)
	p.mask = nshards - 1
	for i := range p.shards {
		p.shards[i].id = i
	}
	p.hints.New = func() any { return &hint{shard: int(p.nextHint.Add(1)-1) & p.mask} }
}

// ready makes a zero Pool usable, with the default configuration.
func (p *Pool) ready() { p.once.Do(func() { p.init(defaultPoolConfig()) }) }

// RegionSize returns the size of the pool's regions in bytes.
func (p *Pool) RegionSize() int {
	p.ready()
	return p.regionSize
}

// MinBlock returns the pool's smallest block size in bytes.
func (p *Pool) MinBlock() int {
	p.ready()
	return p.minBlock
}

// Levels returns the number of block sizes: level l holds blocks of
// MinBlock()<<l bytes, the last level whole regions.
func (p *Pool) Levels() int {
	p.ready()
	return p.top + 1
}

// BlockSize returns the size of the block Get(n) hands out: n rounded up to
// a power of two no smaller than the minimum block, or for a request larger
// than a region, n rounded up to a page. It returns 0 for n out of range.
func (p *Pool) BlockSize(n int) int {
	p.ready()
	if n < 0 || n > MaxAlloc {
		return 0
	}
	if l, ok := p.level(n); ok {
		return p.minBlock << l
	}
	return roundUp(n, p.pageSize)
}

// Get returns a slice of n bytes (0 ≤ n ≤ [MaxAlloc]) whose capacity is the
// whole block holding it ([Pool.BlockSize]); the caller may use all of it.
// Its contents are whatever the block's last user left there. Every
// successful Get must be matched by one [Pool.Put] of the slice (or of a
// reslice of it with the same data pointer and capacity).
//
// Get fails with [ErrInvalid] for n out of range, [ErrClosed] after Close,
// or an error from the operating system when a new off-heap region cannot
// be mapped. A Go heap region that cannot be allocated is fatal, as for
// make. Get is safe for concurrent use.
func (p *Pool) Get(n int) ([]byte, error) {
	p.ready()
	if n < 0 || n > MaxAlloc {
		return nil, fmt.Errorf("buffer: get %d bytes: not in [0, %d]: %w", n, MaxAlloc, ErrInvalid)
	}
	l, ok := p.level(n)
	if !ok {
		return p.getDedicated(n)
	}
	h := p.hints.Get().(*hint)
	sh := p.lockShard(h)
	if p.closed.Load() {
		sh.mu.Unlock()
		p.hints.Put(h)
		return nil, fmt.Errorf("buffer: get %d bytes: %w", n, ErrClosed)
	}
	b, ok := p.takeLocked(sh, l, n)
	var err error
	if !ok {
		b, err = p.takeSlow(sh, l, n)
	}
	if err == nil {
		sh.gets++
	}
	sh.mu.Unlock()
	p.hints.Put(h)
	return b, err
}

// level returns the level of the block for an n-byte request, and false if
// it exceeds a region.
func (p *Pool) level(n int) (int, bool) {
	if n <= p.minBlock {
		return 0, true
	}
	l := bits.Len(uint(n-1)) - int(p.minShift)
	return l, l <= p.top
}

// lockShard locks and returns the first shard, from h's, whose lock is free,
// or waits for h's if none is; h remembers the shard locked.
func (p *Pool) lockShard(h *hint) *shard {
	for k := 0; k <= p.mask; k++ {
		i := (h.shard + k) & p.mask
		if sh := &p.shards[i]; sh.mu.TryLock() {
			h.shard = i
			return sh
		}
	}
	sh := &p.shards[h.shard&p.mask]
	sh.mu.Lock()
	return sh
}

// takeLocked hands out an n-byte block of level l from sh's cache or
// regions. sh.mu must be held.
func (p *Pool) takeLocked(sh *shard, l, n int) ([]byte, bool) {
	if c := &sh.cache[l]; c.n > 0 {
		c.n--
		ref := c.refs[c.n]
		c.refs[c.n] = blockRef{}
		bs := p.minBlock << l
		r := ref.r
		r.state[ref.idx] = stUsed | uint8(l)
		r.cached -= bs
		r.used += bs
		r.nused++
		sh.cachedBytes -= bs
		return r.block(ref.idx, l, n), true
	}
	// The region whose smallest free block that fits is smallest; the
	// first such region on a tie. Splitting a larger block while another
	// region has one of the right size would fragment both.
	var best *region
	bestLevel := maxLevels
	for _, r := range sh.regions {
		if k := r.fit(l); k < bestLevel {
			best, bestLevel = r, k
			if k == l {
				break
			}
		}
	}
	if best == nil {
		return nil, false
	}
	idx, _ := best.take(l)
	if best.counted {
		best.counted = false
		p.empty.Add(-1)
	}
	return best.block(idx, l, n), true
}

// takeSlow serves a request sh could not serve at once: it flushes sh's
// cache (coalescing may make room), then, if sh has regions of its own
// (all too full), tries the other shards whose locks are free, then grows
// sh by a region. A shard without regions grows at once: borrowing would
// send every Put of the borrowed blocks to the lender's lock, and the
// shards would contend as one. sh.mu must be held; other shards are only
// ever try-locked while it is, so shards never deadlock.
func (p *Pool) takeSlow(sh *shard, l, n int) ([]byte, error) {
	if sh.cachedBytes > 0 {
		if err := p.flushLocked(sh); err != nil {
			return nil, err
		}
		if b, ok := p.takeLocked(sh, l, n); ok {
			return b, nil
		}
	}
	for k := 1; k <= p.mask && len(sh.regions) > 0; k++ {
		o := &p.shards[(sh.id+k)&p.mask]
		if !o.mu.TryLock() {
			continue
		}
		b, ok := p.takeLocked(o, l, n)
		o.mu.Unlock()
		if ok {
			return b, nil
		}
	}
	if err := p.growLocked(sh); err != nil {
		return nil, fmt.Errorf("buffer: get %d bytes: %w", n, err)
	}
	b, _ := p.takeLocked(sh, l, n) // a fresh region fits any level
	return b, nil
}

// growLocked adds a new region to sh. sh.mu must be held.
func (p *Pool) growLocked(sh *shard) error {
	if p.closed.Load() {
		return ErrClosed
	}
	mem, heap, err := regionMem(p.regionSize, p.offHeap)
	if err != nil {
		return err
	}
	r := newBuddyRegion(mem, heap, p.offHeap, p.top)
	r.owner = sh
	sh.regions = append(sh.regions, r)
	p.mu.Lock()
	p.index.add(r)
	p.mu.Unlock()
	return nil
}

// getDedicated serves a request larger than a region with a region of its
// own, n rounded up to a page.
func (p *Pool) getDedicated(n int) ([]byte, error) {
	if p.closed.Load() {
		return nil, fmt.Errorf("buffer: get %d bytes: %w", n, ErrClosed)
	}
	size := roundUp(n, p.pageSize)
	mem, heap, err := regionMem(size, p.offHeap)
	if err != nil {
		return nil, fmt.Errorf("buffer: get %d bytes: %w", n, err)
	}
	r := &region{
		mem:       mem,
		base:      uintptr(unsafe.Pointer(unsafe.SliceData(mem))),
		size:      size,
		heap:      heap,
		mapped:    p.offHeap,
		dedicated: true,
		used:      size,
		nused:     1,
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		err := r.freeMem()
		return nil, errors.Join(fmt.Errorf("buffer: get %d bytes: %w", n, ErrClosed), err)
	}
	p.index.add(r)
	p.dedicated++
	p.dedicatedBytes += size
	p.dedicatedGets++
	return mem[:n:size], nil
}

// Put gives a block back to the pool. b must be a slice Get returned, or a
// reslice of it with the same data pointer and capacity (its length does
// not matter: b[:0] frees the block). After Put the caller must not use b.
//
// Put never corrupts the pool: it returns an error and changes nothing when
// b is not a live block. The error wraps [ErrForeign] when b's memory is not
// in the pool (nil, empty or another allocation); [ErrNotBlockStart] when b
// points inside the pool but is not a whole block (b[k:], b[:k:k]);
// [ErrDoubleFree] when the block is already free. A double free is caught
// while the block stays free; once the memory has been merged into a larger
// free block it reads as [ErrNotBlockStart] (or [ErrForeign] if its region
// has been released), and once it has been handed out again it cannot be
// told from a valid Put, as with any allocator — [Buf] handles rule this
// out. Put is safe for concurrent use.
func (p *Pool) Put(b []byte) error {
	p.ready()
	c := cap(b)
	if c == 0 {
		return fmt.Errorf("buffer: put of a slice of capacity 0: %w", ErrForeign)
	}
	ptr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	r := p.index.lookup(ptr)
	if r == nil {
		return fmt.Errorf("buffer: put of %d bytes at %#x: %w", c, ptr, ErrForeign)
	}
	if r.dedicated {
		return p.putDedicated(r, ptr, c)
	}
	sh := r.owner
	sh.mu.Lock()
	err := p.putLocked(sh, r, ptr, c)
	sh.mu.Unlock()
	return err
}

// putLocked checks and frees the block at ptr of capacity c in r. sh.mu
// (r's owner) must be held.
func (p *Pool) putLocked(sh *shard, r *region, ptr uintptr, c int) error {
	if r.released {
		return fmt.Errorf("buffer: put of %d bytes at %#x: region released: %w", c, ptr, ErrDoubleFree)
	}
	off := ptr - r.base
	if off&uintptr(p.minBlock-1) != 0 {
		return fmt.Errorf("buffer: put of %d bytes at region offset %d: not a block boundary: %w", c, off, ErrNotBlockStart)
	}
	idx := int32(off >> p.minShift)
	st := r.state[idx]
	l := int(st & stLevel)
	switch st & stKindMask {
	case stInterior:
		return fmt.Errorf("buffer: put of %d bytes at region offset %d: inside a block: %w", c, off, ErrNotBlockStart)
	case stFree, stCached:
		return fmt.Errorf("buffer: put of %d bytes at region offset %d: block already free: %w", c, off, ErrDoubleFree)
	}
	if bs := p.minBlock << l; c != bs {
		return fmt.Errorf("buffer: put of capacity %d at region offset %d: the block holds %d: %w", c, off, bs, ErrNotBlockStart)
	}
	sh.puts++
	bs := p.minBlock << l
	r.used -= bs
	r.nused--
	if cc := &sh.cache[l]; l < r.top && cc.n < cacheSlots && sh.cachedBytes+bs <= p.cacheLimit && !p.closed.Load() {
		r.state[idx] = stCached | uint8(l)
		r.cached += bs
		sh.cachedBytes += bs
		cc.refs[cc.n] = blockRef{r: r, idx: idx}
		cc.n++
		return nil
	}
	return p.releaseLocked(sh, r, idx, l)
}

// releaseLocked returns block idx of level l to r's buddy lists and deals
// with r if that empties it. sh.mu (r's owner) must be held.
func (p *Pool) releaseLocked(sh *shard, r *region, idx int32, l int) error {
	if !r.release(idx, l) {
		return nil
	}
	if !p.closed.Load() {
		for {
			e := p.empty.Load()
			if int(e) >= p.retain {
				break
			}
			if p.empty.CompareAndSwap(e, e+1) {
				r.counted = true
				return nil
			}
		}
	}
	return p.dropLocked(sh, r)
}

// dropLocked releases the empty region r. sh.mu (r's owner) must be held.
func (p *Pool) dropLocked(sh *shard, r *region) error {
	if r.counted {
		r.counted = false
		p.empty.Add(-1)
	}
	if i := slices.Index(sh.regions, r); i >= 0 {
		sh.regions = slices.Delete(sh.regions, i, i+1)
	}
	p.mu.Lock()
	p.index.remove(r)
	p.mu.Unlock()
	r.released = true
	return r.freeMem()
}

// flushLocked returns every block in sh's cache to the buddy lists. sh.mu
// must be held.
func (p *Pool) flushLocked(sh *shard) error {
	var errs []error
	for l := range sh.cache {
		c := &sh.cache[l]
		bs := p.minBlock << l
		for c.n > 0 {
			c.n--
			ref := c.refs[c.n]
			c.refs[c.n] = blockRef{}
			ref.r.cached -= bs
			sh.cachedBytes -= bs
			if err := p.releaseLocked(sh, ref.r, ref.idx, l); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// putDedicated frees the dedicated region r, handed out whole.
func (p *Pool) putDedicated(r *region, ptr uintptr, c int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case r.released:
		return fmt.Errorf("buffer: put of %d bytes at %#x: %w", c, ptr, ErrDoubleFree)
	case ptr != r.base || c != r.size:
		return fmt.Errorf("buffer: put of capacity %d at offset %d of a %d-byte block: %w", c, ptr-r.base, r.size, ErrNotBlockStart)
	}
	p.index.remove(r)
	r.released = true
	p.dedicated--
	p.dedicatedBytes -= r.size
	p.dedicatedPuts++
	return r.freeMem()
}

// Trim returns every cached block to the buddy lists, coalescing all free
// memory, and releases the empty regions beyond the retained number. It is
// safe for concurrent use.
func (p *Pool) Trim() error {
	p.ready()
	var errs []error
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		errs = append(errs, p.flushLocked(sh))
		sh.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Close releases every region that holds no block still handed out and makes
// further Gets fail with [ErrClosed]. Blocks still handed out stay valid;
// Put them as usual, and each region is released as its last block comes
// back. Close then reports how many there were, wrapping [ErrInUse]. A
// second Close does nothing.
func (p *Pool) Close() error {
	p.ready()
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	live := 0
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		errs = append(errs, p.flushLocked(sh)) // drops regions it empties
		for _, r := range slices.Clone(sh.regions) {
			if r.nused == 0 {
				errs = append(errs, p.dropLocked(sh, r))
			}
			live += r.nused
		}
		sh.mu.Unlock()
	}
	p.mu.Lock()
	live += p.dedicated
	p.mu.Unlock()
	if live > 0 {
		errs = append(errs, fmt.Errorf("buffer: close with %d blocks still handed out: %w", live, ErrInUse))
	}
	return errors.Join(errs...)
}

// isPow2 reports whether n is a positive power of two.
func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// roundUp rounds n up to a multiple of m, a power of two.
func roundUp(n, m int) int { return (n + m - 1) &^ (m - 1) }
