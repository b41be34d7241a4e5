//go:build !unix

package buffer

import "fmt"

// offHeapSupported reports whether [WithOffHeap] regions are available.
const offHeapSupported = false

// mapMem reports that this platform has no mmap.
func mapMem(size int) ([]byte, error) {
	return nil, fmt.Errorf("buffer: off-heap region of %d bytes: %w", size, ErrNotSupported)
}

// unmapMem is never called where mapMem always fails.
func unmapMem(mem []byte) error { return nil }
