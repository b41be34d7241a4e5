// Package buffer is mpgo's buffering layer: where message memory comes from,
// how typed data is packed into it and read back, and who may free it when.
// It follows the buffering layer of MPJ Express (mpjbuf: a buddy allocator
// of regions and sectioned, typed message buffers) and the explicitly
// managed communication buffers of Javia-II (jbufs).
//
// Three types, one concept each:
//
//   - [Pool] is a concurrent allocator of byte blocks using Knuth's buddy
//     system (D. E. Knuth, The Art of Computer Programming, vol. 1,
//     section 2.5, "Dynamic Storage Allocation", Algorithms R and S), with
//     memory from the Go heap or, off-heap, from mmap.
//   - [Buffer] packs numbers into typed sections (element kind and count,
//     8-byte aligned, byte order selectable) and Go values into a gob
//     stream, with gather, scatter and strided variants for non-contiguous
//     data — mpjbuf's static and dynamic sections.
//   - [Buf] is a pool block with an explicit lifetime: typed views of one
//     element type at a time, transfers in flight counted, ownership handed
//     over without copying, freed exactly once — the jbufs discipline.
//
// Nothing in the package panics on bad input or corrupts its state: misuse
// (a double free, a foreign or partial slice, a read of the wrong type, an
// index out of range, malformed wire bytes) returns an error wrapping one
// of the sentinels in errors.go, to be tested with [errors.Is].
//
// The package supports 64-bit platforms only (int, uint and uintptr travel
// as 8 bytes).
//
// # Usage: pooled blocks
//
// A Pool is made once and shared by every goroutine:
//
//	p, err := buffer.NewPool()                  // 8 MiB regions, 128-byte minimum block
//	b, err := p.Get(n)                          // len n, cap a power of two ≥ n
//	…
//	err = p.Put(b)                              // merges with its buddy if free
//	defer p.Close()
//
// Get and Put take about 50 ns and allocate nothing on the Go heap, so
// message buffers cost the garbage collector nothing. [WithOffHeap] takes
// regions from mmap instead, memory the collector never scans or moves and
// a network card can register (the papers' direct buffers).
//
// # Usage: packing a message
//
//	w, err := buffer.NewWriter(buffer.WithPool(p), buffer.WithOrder(binary.BigEndian))
//	defer w.Free()
//	err = buffer.Write(w, positions)                     // []float64
//	err = buffer.Gather(w, ids, []int{4, 0, 9})          // three picked elements
//	err = buffer.GatherStrided(w, grid, 12, []int{8}, []int{64}) // a column
//	err = w.WriteValue(meta)                             // any gob-encodable value
//	wire, err := w.Commit()                              // the bytes to send
//
// and unpacking it, in the same order, on the other side:
//
//	r, err := buffer.NewReader(wire)
//	kind, count, err := r.Next()                         // size the destination
//	err = buffer.Read(r, positions)
//	err = buffer.Scatter(r, ids, []int{4, 0, 9})
//	err = buffer.ScatterStrided(r, grid, 12, []int{8}, []int{64})
//	err = r.ReadValue(&meta)
//
// Reading a section into a slice of another element type or length fails
// with [ErrSectionType] or [ErrSectionCount] and names both sides. In the
// machine's byte order numbers are copied as memory; in the other, each is
// byte-swapped. [SectionSize] computes a message's static size beforehand.
//
// # Usage: explicit-lifetime buffers
//
//	b, err := p.Alloc(1 << 20)
//	v, err := buffer.View[float64](b)  // the same memory as []float64
//	…fill v…
//	b.Unview()
//	b.Acquire()                        // a send reads the memory…
//	b.Done()                           // …and is done
//	owned, err := b.Handoff()          // zero-copy handoff: the receiver owns owned
//	err = owned.Free()                 // exactly once, by the owner
//
// See [Buf] for the precise ownership rules.
package buffer
