package typed

import (
	"fmt"
	"unsafe"

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
