package typed

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm"
)

// mapElems maps n zeroed elements of T outside the Go heap (see
// [AllocWindow]): the mapping and the elements over it. n == 0 maps
// nothing.
func mapElems[T any](n int) ([]byte, []T, error) {
	sz := int(unsafe.Sizeof(*new(T)))
	if n == 0 || sz == 0 {
		return nil, make([]T, n), nil
	}
	if n > maxWindowBytes/sz {
		return nil, nil, fmt.Errorf("typed: window of %d elements of %d bytes: %w", n, sz, comm.ErrArg)
	}
	mem, err := mapMem(n * sz)
	if err != nil {
		return nil, nil, err
	}
	return mem, unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n), nil
}

// maxWindowBytes bounds one rank's mapped part: 1 TiB, beyond any machine
// this runs on and far from overflowing an int.
const maxWindowBytes = 1 << 40

// mapMem maps size zeroed bytes outside the Go heap, or, where this
// platform cannot, allocates them on the heap (as []uint64, aligned for
// any element type).
func mapMem(size int) ([]byte, error) {
	mem, err := buffer.MapOffHeap(size)
	if errors.Is(err, buffer.ErrNotSupported) {
		words := make([]uint64, (size+7)/8)
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size), nil
	}
	if err != nil {
		return nil, fmt.Errorf("typed: a window of %d bytes: %w", size, err)
	}
	return mem, nil
}

// unmapMem gives back memory from mapMem (heap memory, where there is no
// mmap, is left to the garbage collector: UnmapOffHeap does nothing there).
func unmapMem(mem []byte) error { return buffer.UnmapOffHeap(mem) }
