//go:build unix

package buffer

import (
	"fmt"
	"syscall"
)

// offHeapSupported reports whether [WithOffHeap] regions are available.
const offHeapSupported = true

// mapMem maps size bytes of anonymous private memory, outside the Go heap.
func mapMem(size int) ([]byte, error) {
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("buffer: mmap %d bytes: %w", size, err)
	}
	return mem, nil
}

// unmapMem unmaps memory returned by mapMem.
func unmapMem(mem []byte) error {
	if err := syscall.Munmap(mem); err != nil {
		return fmt.Errorf("buffer: munmap %d bytes: %w", len(mem), err)
	}
	return nil
}
