package buffer

import "fmt"

// Gather and scatter move non-contiguous data — the elements an index list or
// a strided multi-dimensional region picks out of a slice — to and from one
// contiguous section: the packing behind MPI's derived datatypes (indexed,
// vector, subarray). Every index is checked before anything is written: a
// bad one fails with [ErrBounds] and leaves the Buffer and the slice as they
// were.

// Gather appends a section of len(idx) elements: src[idx[0]], src[idx[1]], …
// Indexes may repeat. b must be writing.
func Gather[T Number](b *Buffer, src []T, idx []int) error {
	if err := b.writable("gather"); err != nil {
		return err
	}
	if err := checkIndexes("gather", idx, len(src)); err != nil {
		return err
	}
	k := KindOf[T]()
	p, err := b.beginSection("gather", k, len(idx))
	if err != nil {
		return err
	}
	dst := asElems[T](p) // the store is 8-byte aligned, and so is p
	for i, j := range idx {
		dst[i] = src[j]
	}
	if b.swap {
		swapUnits(p, k.unit())
	}
	return nil
}

// Scatter takes b's next section, of len(idx) elements, into dst: element i
// goes to dst[idx[i]] (when indexes repeat, the last write wins). The
// section must match as for [Read]. b must be reading.
func Scatter[T Number](b *Buffer, dst []T, idx []int) error {
	if err := b.readable("scatter"); err != nil {
		return err
	}
	if err := checkIndexes("scatter", idx, len(dst)); err != nil {
		return err
	}
	k := KindOf[T]()
	p, next, err := b.nextSection("scatter", k, len(idx))
	if err != nil {
		return err
	}
	src := elems[T](b, p, k)
	for i, j := range idx {
		dst[j] = src[i]
	}
	b.consume(next)
	return nil
}

func checkIndexes(op string, idx []int, n int) error {
	for i, j := range idx {
		if uint(j) >= uint(n) {
			return fmt.Errorf("buffer: %s: idx[%d] = %d outside [0, %d): %w", op, i, j, n, ErrBounds)
		}
	}
	return nil
}

// GatherStrided appends a section of the elements of a strided
// multi-dimensional region of src: for every multi-index i with
// 0 ≤ i[k] < shape[k], the element src[offset + Σ i[k]*strides[k]], in
// row-major order (the last dimension varies fastest). Strides may be
// negative or zero; no shape means the one element src[offset]. A region
// whose innermost stride is 1 is copied a run at a time, and dimensions
// that are contiguous in src are merged into one run.
//
// len(shape) must equal len(strides), at most 32, and shapes must not be
// negative ([ErrInvalid]); every element must lie in src ([ErrBounds]).
// b must be writing.
func GatherStrided[T Number](b *Buffer, src []T, offset int, shape, strides []int) error {
	if err := b.writable("gather strided"); err != nil {
		return err
	}
	lay, err := makeLayout("gather strided", len(src), offset, shape, strides)
	if err != nil {
		return err
	}
	k := KindOf[T]()
	p, err := b.beginSection("gather strided", k, lay.count)
	if err != nil {
		return err
	}
	if lay.count > 0 {
		stridedGather(asElems[T](p), src, offset, &lay)
	}
	if b.swap {
		swapUnits(p, k.unit())
	}
	return nil
}

// ScatterStrided takes b's next section into the strided region of dst
// that [GatherStrided] with the same arguments would have packed. The
// section must match as for [Read] (its count is the product of shape).
// b must be reading.
func ScatterStrided[T Number](b *Buffer, dst []T, offset int, shape, strides []int) error {
	if err := b.readable("scatter strided"); err != nil {
		return err
	}
	lay, err := makeLayout("scatter strided", len(dst), offset, shape, strides)
	if err != nil {
		return err
	}
	k := KindOf[T]()
	p, next, err := b.nextSection("scatter strided", k, lay.count)
	if err != nil {
		return err
	}
	if lay.count > 0 {
		stridedScatter(dst, elems[T](b, p, k), offset, &lay)
	}
	b.consume(next)
	return nil
}

// maxDims bounds the dimensions of a strided region.
const maxDims = 32

// layout is a strided region reduced to its essentials: dimensions of
// extent 1 dropped, and each dimension that steps exactly over the whole of
// the next merged into it, so that a contiguous region is a single run.
type layout struct {
	count int          // elements
	nd    int          // dimensions left
	dims  [maxDims]dim // outermost first
}

type dim struct{ n, stride int }

// makeLayout checks a strided region of a slice of length elements and
// reduces it.
func makeLayout(op string, length, offset int, shape, strides []int) (layout, error) {
	var lay layout
	if len(shape) != len(strides) || len(shape) > maxDims {
		return lay, fmt.Errorf("buffer: %s: %d extents, %d strides (at most %d): %w", op, len(shape), len(strides), maxDims, ErrInvalid)
	}
	lay.count = 1
	for k, n := range shape {
		if n < 0 {
			return lay, fmt.Errorf("buffer: %s: shape[%d] = %d: %w", op, k, n, ErrInvalid)
		}
		if n == 0 {
			lay.count = 0
		} else if lay.count > 0 {
			if lay.count > MaxCount/n {
				return lay, fmt.Errorf("buffer: %s: shape %v: more than %d elements: %w", op, shape, MaxCount, ErrInvalid)
			}
			lay.count *= n
		}
	}
	if lay.count == 0 {
		return lay, nil
	}
	if uint(offset) >= uint(length) {
		return lay, fmt.Errorf("buffer: %s: offset %d outside [0, %d): %w", op, offset, length, ErrBounds)
	}
	// The region spans [lo, hi]. Each dimension moves one end by at most
	// length (else it cannot fit), so nothing overflows before the check.
	lo, hi := offset, offset
	for k, n := range shape {
		s := strides[k]
		if n == 1 || s == 0 {
			continue
		}
		as := s
		if as < 0 {
			as = -as
		}
		if as < 0 || n-1 > length/as { // as < 0: s was the most negative int
			return lay, fmt.Errorf("buffer: %s: dimension %d (%d × stride %d) exceeds %d elements: %w", op, k, n, s, length, ErrBounds)
		}
		if s > 0 {
			hi += (n - 1) * s
		} else {
			lo += (n - 1) * s
		}
		if lo < 0 || hi >= length {
			return lay, fmt.Errorf("buffer: %s: offset %d, shape %v, strides %v reach [%d, %d], outside [0, %d): %w",
				op, offset, shape, strides, lo, hi, length, ErrBounds)
		}
	}
	// Reduce, innermost first.
	var rev [maxDims]dim
	nd := 0
	for k := len(shape) - 1; k >= 0; k-- {
		n, s := shape[k], strides[k]
		if n == 1 {
			continue
		}
		if nd > 0 && s == rev[nd-1].n*rev[nd-1].stride {
			rev[nd-1].n *= n
			continue
		}
		rev[nd] = dim{n, s}
		nd++
	}
	lay.nd = nd
	for i := range nd {
		lay.dims[i] = rev[nd-1-i]
	}
	return lay, nil
}

// stridedGather packs the region lay of src, starting at offset, into dst
// (len lay.count). The region has been checked.
func stridedGather[T Number](dst, src []T, offset int, lay *layout) {
	if lay.nd == 0 {
		dst[0] = src[offset]
		return
	}
	inner := lay.dims[lay.nd-1]
	outer := lay.dims[:lay.nd-1]
	var ctr [maxDims]int
	base, k := offset, 0
	for {
		if inner.stride == 1 {
			copy(dst[k:k+inner.n], src[base:base+inner.n])
		} else {
			j := base
			for i := range dst[k : k+inner.n] {
				dst[k+i] = src[j]
				j += inner.stride
			}
		}
		k += inner.n
		if !step(outer, ctr[:len(outer)], &base) {
			return
		}
	}
}

// stridedScatter unpacks src (len lay.count) into the region lay of dst,
// starting at offset. The region has been checked.
func stridedScatter[T Number](dst, src []T, offset int, lay *layout) {
	if lay.nd == 0 {
		dst[offset] = src[0]
		return
	}
	inner := lay.dims[lay.nd-1]
	outer := lay.dims[:lay.nd-1]
	var ctr [maxDims]int
	base, k := offset, 0
	for {
		if inner.stride == 1 {
			copy(dst[base:base+inner.n], src[k:k+inner.n])
		} else {
			j := base
			for _, v := range src[k : k+inner.n] {
				dst[j] = v
				j += inner.stride
			}
		}
		k += inner.n
		if !step(outer, ctr[:len(outer)], &base) {
			return
		}
	}
}

// step advances the odometer ctr over dims, moving base along, and reports
// false when it wraps around (the region is done).
func step(dims []dim, ctr []int, base *int) bool {
	for d := len(dims) - 1; d >= 0; d-- {
		ctr[d]++
		*base += dims[d].stride
		if ctr[d] < dims[d].n {
			return true
		}
		*base -= dims[d].stride * dims[d].n
		ctr[d] = 0
	}
	return false
}
