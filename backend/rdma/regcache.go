//go:build rdma

package rdma

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
)

// regCache is the RDMA device's registration (pin-down) cache, as in
// ibvdev and MPI libraries over verbs: registering memory costs a system
// call and, on a real NIC, pinning every page, so a user buffer that is
// used again (the common case: a solver's halo, a benchmark's window) is
// registered once. An entry holds its buffer pinned (runtime.Pinner) for
// as long as it stays registered, which keeps the Go object alive and in
// place, and so its pages mapped, while the provider may touch them. At
// most regCacheEntries entries and regCacheBytes bytes stay registered
// when unused; the least recently used unused entry goes first.
type regCache struct {
	ep    *fabric.Endpoint
	stats *atomic.Int64 // registrations
	hits  *atomic.Int64

	mu    sync.Mutex
	ents  []*regEntry // guarded by mu; most recently used last
	bytes int         // registered bytes, guarded by mu
}

// Cache bounds.
const (
	regCacheEntries = 64
	regCacheBytes   = 1 << 30
)

// regEntry is one registered buffer.
type regEntry struct {
	mr     *fabric.MR
	base   uintptr
	size   int
	access fabric.Access
	refs   int // transfers using it; guarded by regCache.mu
	pin    runtime.Pinner
}

// region returns the entry's region (nil for a nil entry).
func (e *regEntry) region() *fabric.MR {
	if e == nil {
		return nil
	}
	return e.mr
}

// acquire returns a registration covering b for access, registering b
// if none does; release must follow once the transfer is over.
func (c *regCache) acquire(b []byte, access fabric.Access) (*regEntry, error) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.ents) - 1; i >= 0; i-- {
		e := c.ents[i]
		if p >= e.base && p+uintptr(len(b)) <= e.base+uintptr(e.size) && e.access&access == access {
			e.refs++
			copy(c.ents[i:], c.ents[i+1:])
			c.ents[len(c.ents)-1] = e
			c.hits.Add(1)
			return e, nil
		}
	}
	e := &regEntry{base: p, size: len(b), access: access, refs: 1}
	e.pin.Pin(&b[0])
	mr, err := c.ep.Register(b, access|fabric.AccessSend|fabric.AccessRecv)
	if err != nil {
		e.pin.Unpin()
		return nil, err
	}
	e.mr = mr
	c.stats.Add(1)
	c.ents = append(c.ents, e)
	c.bytes += e.size
	c.evictLocked()
	return e, nil
}

// release ends a transfer's use of e.
func (c *regCache) release(e *regEntry) {
	c.mu.Lock()
	e.refs--
	c.evictLocked()
	c.mu.Unlock()
}

// evictLocked deregisters unused entries, oldest first, while the cache
// is over its bounds. c.mu must be held.
func (c *regCache) evictLocked() {
	for i := 0; i < len(c.ents) && (len(c.ents) > regCacheEntries || c.bytes > regCacheBytes); {
		e := c.ents[i]
		if e.refs > 0 {
			i++
			continue
		}
		c.drop(i)
	}
}

// drop deregisters entry i. c.mu must be held.
func (c *regCache) drop(i int) {
	e := c.ents[i]
	e.mr.Close()
	e.pin.Unpin()
	c.bytes -= e.size
	c.ents = append(c.ents[:i], c.ents[i+1:]...)
}

// closeAll deregisters every entry (the device is closing: no transfer
// uses them any more).
func (c *regCache) closeAll() {
	c.mu.Lock()
	for len(c.ents) > 0 {
		c.drop(len(c.ents) - 1)
	}
	c.mu.Unlock()
}
