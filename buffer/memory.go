package buffer

import "unsafe"

// Region memory comes from one of two places (the papers' indirect and
// direct buffers):
//
//   - the Go heap, as a []uint64 so that every block is 8-byte aligned; the
//     garbage collector never scans it (it holds no pointers) and frees it
//     once the region is released and no handed-out slice refers to it;
//   - anonymous private mmap (off-heap), page-aligned, never moved or
//     scanned by the collector and registrable with a network card; it is
//     munmapped when the region is released.

// heapMem returns size bytes (a multiple of 8) of zeroed Go heap memory and
// the []uint64 that owns it.
func heapMem(size int) ([]byte, []uint64) {
	words := make([]uint64, size/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size), words
}

// regionMem returns size bytes of region memory, off the heap if offHeap.
func regionMem(size int, offHeap bool) (mem []byte, heap []uint64, err error) {
	if offHeap {
		mem, err = mapMem(size)
		return mem, nil, err
	}
	mem, heap = heapMem(size)
	return mem, heap, nil
}

// freeMem gives r's memory back: munmap for a mapped region; for a heap
// region, dropping the references lets the collector free it.
func (r *region) freeMem() error {
	r.released = true
	mem := r.mem
	r.mem, r.heap = nil, nil
	r.state, r.link = nil, nil
	if r.mapped {
		return unmapMem(mem)
	}
	return nil
}
