//go:build !amd64 && !arm64

package shm

import "unsafe"

// prefetch does nothing where the rings run on no core we wrote the hint
// for (see prefetch.go).
func prefetch(p unsafe.Pointer, n uintptr) {}
