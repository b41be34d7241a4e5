//go:build unix

package typed

import (
	"fmt"
	"syscall"
)

// mapMem maps size bytes of anonymous private memory, outside the Go heap:
// zero pages the kernel provides on first touch.
func mapMem(size int) ([]byte, error) {
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("typed: mmap of a %d-byte window: %w", size, err)
	}
	return mem, nil
}

// unmapMem gives memory from mapMem back.
func unmapMem(mem []byte) error {
	if err := syscall.Munmap(mem); err != nil {
		return fmt.Errorf("typed: munmap of a %d-byte window: %w", len(mem), err)
	}
	return nil
}
