//go:build amd64 || arm64

package shm

import "unsafe"

// prefetch asks the core for the cache lines of the n bytes at p
// (PREFETCHT0, PRFM PLDL1KEEP) without waiting for them: a hint, which
// changes no memory and cannot fault.
//
//go:noescape
func prefetch(p unsafe.Pointer, n uintptr)
