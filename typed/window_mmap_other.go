//go:build !unix

package typed

import "unsafe"

// mapMem allocates size zeroed bytes on the Go heap, as a []uint64 so that
// they are aligned for any element type; this platform has no mmap.
func mapMem(size int) ([]byte, error) {
	words := make([]uint64, (size+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size), nil
}

// unmapMem leaves heap memory to the garbage collector.
func unmapMem(mem []byte) error { return nil }
