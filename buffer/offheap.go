package buffer

// MapOffHeap returns size bytes of zeroed memory mapped outside the Go
// heap (anonymous private mmap): page-aligned, never moved or scanned by
// the garbage collector, registrable with a network card, and taken from
// the operating system page by page as it is first touched, so that a
// large mapping costs little until used. Give it back with
// [UnmapOffHeap]; the garbage collector never will. Where there is no
// mmap it fails with an error wrapping [ErrNotSupported].
func MapOffHeap(size int) ([]byte, error) { return mapMem(size) }

// UnmapOffHeap gives back memory that [MapOffHeap] returned, all of it at
// once; the memory must not be used afterwards.
func UnmapOffHeap(mem []byte) error { return unmapMem(mem) }
