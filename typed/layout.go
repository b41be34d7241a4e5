package typed

import (
	"fmt"
	"math"
	"slices"

	"github.com/mpgo/mpgo/comm"
)

// A Layout picks elements out of a slice, in a fixed order: what an MPI
// derived datatype (MPI_Type_contiguous, _vector, _indexed,
// _create_subarray) describes for one element type. Element offsets are
// measured from the start of the slice and are never negative.
//
// Internally every layout is one shape: a pattern of runs of consecutive
// elements (offsets relative to a base), repeated over an odometer of
// dimensions (count and stride each, outermost first), starting at an
// origin. Vector is one run repeated over one dimension; a subarray is one
// run (a row of the block) over the other dimensions; Indexed is a pattern
// with no dimension; [Layout.Repeat] adds an outer dimension. Construction
// merges what is contiguous, so a layout that selects consecutive elements
// is one run and moves as a plain slice.
//
// A Layout is an immutable value: copy it, share it between goroutines and
// use it with any element type. The zero Layout selects nothing.
type Layout struct {
	runs    []run // the pattern, in order; none empty
	dims    []dim // repetitions of the pattern, outermost first; each n ≥ 2
	origin  int   // offset of the first repetition's base
	per     int   // elements in one pattern
	count   int   // elements selected
	extent  int   // elements of the slice the layout spans, from offset 0
	overlap bool  // some element is selected more than once
	short   bool  // every run of the pattern is at most shortRun elements
}

// run is off, off+1, …, off+n-1 relative to a base.
type run struct{ off, n int }

// dim repeats what is inside it n times, stride elements apart.
type dim struct{ n, stride int }

const (
	// maxLayoutDims bounds a layout's dimensions, as the buffer package
	// bounds a strided region's.
	maxLayoutDims = 32
	// maxElems bounds counts and extents so that their size in bytes (up to
	// 16 bytes an element) fits an int.
	maxElems = math.MaxInt / 16
)

// Order is the storage order of a multi-dimensional array for [Subarray].
type Order uint8

const (
	// RowMajor stores the last dimension contiguously (C, Go); the elements
	// of a subarray go in that order, the last index varying fastest.
	RowMajor Order = iota
	// ColumnMajor stores the first dimension contiguously (Fortran); the
	// first index varies fastest.
	ColumnMajor
)

func (o Order) String() string {
	switch o {
	case RowMajor:
		return "row-major"
	case ColumnMajor:
		return "column-major"
	}
	return fmt.Sprintf("Order(%d)", uint8(o))
}

// Count returns the number of elements the layout selects: the length of
// the packed message.
func (l Layout) Count() int { return l.count }

// Extent returns how many elements a slice needs for the layout: one past
// the highest offset it can reach (for a subarray, the whole array). It is
// also the distance between repetitions in [Layout.Repeat], like an MPI
// datatype's extent when its lower bound is 0.
func (l Layout) Extent() int { return l.extent }

// String describes l for debugging: its count, extent and how many runs
// of consecutive elements it moves.
func (l Layout) String() string {
	runs := len(l.runs)
	for _, d := range l.dims {
		runs *= d.n
	}
	return fmt.Sprintf("layout of %d elements in %d runs, extent %d", l.count, runs, l.extent)
}

// Contiguous returns the layout of the first count elements (count ≥ 0),
// like MPI_Type_contiguous of a basic type.
func Contiguous(count int) (Layout, error) {
	if count < 0 || count > maxElems {
		return Layout{}, fmt.Errorf("typed: contiguous: count %d: %w", count, comm.ErrArg)
	}
	return build(0, []run{{0, count}}, nil, count), nil
}

// Vector returns MPI_Type_vector's layout: count blocks of blocklength
// consecutive elements, the starts of consecutive blocks stride elements
// apart. stride may exceed blocklength (gaps), equal it (contiguous), be
// smaller than it or zero (blocks overlap: fine to send, an error to receive
// into) or negative: then the blocks go backwards through the slice, the
// first at (count-1)·|stride| and the last at 0, so that the layout still
// starts at element 0 (a Go slice cannot reach below its start, where MPI's
// would begin at a negative offset). Counts must not be negative.
//
// The extent is (count-1)·|stride| + blocklength, or 0 when nothing is
// selected.
func Vector(count, blocklength, stride int) (Layout, error) {
	if count < 0 || blocklength < 0 {
		return Layout{}, fmt.Errorf("typed: vector: count %d, blocklength %d: %w", count, blocklength, comm.ErrArg)
	}
	if count == 0 || blocklength == 0 {
		return Layout{}, nil
	}
	as := stride
	if as < 0 {
		as = -as
	}
	if as < 0 || blocklength > maxElems || count > maxElems/blocklength ||
		(count-1 > 0 && as > (maxElems-blocklength)/(count-1)) { // as < 0: stride was the most negative int
		return Layout{}, fmt.Errorf("typed: vector: count %d, blocklength %d, stride %d: too large: %w", count, blocklength, stride, comm.ErrArg)
	}
	origin := 0
	if stride < 0 {
		origin = (count - 1) * as
	}
	l := build(origin, []run{{0, blocklength}}, []dim{{count, stride}}, (count-1)*as+blocklength)
	l.overlap = count > 1 && as < blocklength
	return l, nil
}

// Indexed returns MPI_Type_indexed's layout: block i is blocklengths[i]
// consecutive elements from offset displacements[i], the blocks in the
// order given (they need not be sorted). Blocks of length 0 select nothing.
// Lengths and offsets must not be negative; blocks may overlap (fine to
// send, an error to receive into). The two slices are not retained.
//
// The extent is the end of the furthest block.
func Indexed(blocklengths, displacements []int) (Layout, error) {
	if len(blocklengths) != len(displacements) {
		return Layout{}, fmt.Errorf("typed: indexed: %d blocklengths, %d displacements: %w", len(blocklengths), len(displacements), comm.ErrArg)
	}
	runs := make([]run, 0, len(blocklengths))
	count, extent := 0, 0
	for i, n := range blocklengths {
		d := displacements[i]
		if n < 0 || d < 0 || n > maxElems || d > maxElems-n {
			return Layout{}, fmt.Errorf("typed: indexed: block %d: length %d at displacement %d: %w", i, n, d, comm.ErrArg)
		}
		if n == 0 {
			continue
		}
		if count > maxElems-n {
			return Layout{}, fmt.Errorf("typed: indexed: more than %d elements: %w", maxElems, comm.ErrArg)
		}
		count += n
		extent = max(extent, d+n)
		runs = append(runs, run{d, n})
	}
	l := build(0, runs, nil, extent)
	l.overlap = overlapping(runs)
	return l, nil
}

// overlapping reports whether two runs share an element.
func overlapping(runs []run) bool {
	sorted := slices.IsSortedFunc(runs, func(a, b run) int { return a.off - b.off })
	if !sorted {
		runs = slices.Clone(runs)
		slices.SortFunc(runs, func(a, b run) int { return a.off - b.off })
	}
	for i := 1; i < len(runs); i++ {
		if runs[i].off < runs[i-1].off+runs[i-1].n {
			return true
		}
	}
	return false
}

// Subarray returns MPI_Type_create_subarray's layout: the block of an
// array of dimensions sizes that starts at index starts and has dimensions
// subsizes, the array stored in order (row-major: the last index varies
// fastest in memory and in the layout). Every size must be at least 1, and
// 0 ≤ starts[k] ≤ starts[k]+subsizes[k] ≤ sizes[k]; a subsize of 0 selects
// nothing. At most 32 dimensions. The slices are not retained.
//
// The extent is the whole array, the product of sizes, as in MPI.
func Subarray(sizes, subsizes, starts []int, order Order) (Layout, error) {
	nd := len(sizes)
	if nd == 0 || nd > maxLayoutDims || len(subsizes) != nd || len(starts) != nd {
		return Layout{}, fmt.Errorf("typed: subarray: %d sizes, %d subsizes, %d starts (1 to %d dimensions): %w",
			len(sizes), len(subsizes), len(starts), maxLayoutDims, comm.ErrArg)
	}
	if order != RowMajor && order != ColumnMajor {
		return Layout{}, fmt.Errorf("typed: subarray: %v: %w", order, comm.ErrArg)
	}
	extent := 1
	for k, n := range sizes {
		sub, st := subsizes[k], starts[k]
		if n < 1 || sub < 0 || st < 0 || sub > n || st > n-sub {
			return Layout{}, fmt.Errorf("typed: subarray: dimension %d: size %d, subsize %d, start %d: %w", k, n, sub, st, comm.ErrArg)
		}
		if extent > maxElems/n {
			return Layout{}, fmt.Errorf("typed: subarray: sizes %v: more than %d elements: %w", sizes, maxElems, comm.ErrArg)
		}
		extent *= n
	}
	// Dimensions in layout order, slowest first, with their strides.
	dims := make([]dim, nd)
	origin, stride := 0, 1
	for i := range nd {
		k := nd - 1 - i // fastest first in memory
		if order == ColumnMajor {
			k = i
		}
		dims[nd-1-i] = dim{subsizes[k], stride}
		origin += starts[k] * stride
		stride *= sizes[k]
	}
	inner := dims[nd-1]
	return build(origin, []run{{0, inner.n}}, dims[:nd-1], extent), nil
}

// Repeat returns n copies of l end to end, each Extent() after the
// previous (MPI's count argument, or MPI_Type_contiguous(n, l)): Count and
// Extent are n times l's. n must not be negative; n = 0 selects nothing.
func (l Layout) Repeat(n int) (Layout, error) {
	// The count may exceed the extent (blocks that overlap): both bound n.
	if n < 0 || (l.extent > 0 && n > maxElems/l.extent) || (l.count > 0 && n > maxElems/l.count) {
		return Layout{}, fmt.Errorf("typed: repeat %d of a layout of %d elements, extent %d: %w", n, l.count, l.extent, comm.ErrArg)
	}
	if len(l.dims) >= maxLayoutDims {
		return Layout{}, fmt.Errorf("typed: repeat: more than %d dimensions: %w", maxLayoutDims, comm.ErrArg)
	}
	if n == 0 || l.count == 0 {
		return Layout{extent: n * l.extent}, nil
	}
	dims := make([]dim, 0, len(l.dims)+1)
	dims = append(dims, dim{n, l.extent})
	dims = append(dims, l.dims...)
	r := build(l.origin, l.runs, dims, n*l.extent)
	r.overlap = l.overlap
	return r, nil
}

// build returns the layout of pattern runs (not retained) repeated over
// dims from origin, reduced: empty runs and
// dimensions of one dropped, adjacent runs merged, a single run that a
// dimension continues absorbed into it, and dimensions that continue one
// another merged. The caller has checked the sizes and sets overlap.
func build(origin int, runs []run, dims []dim, extent int) Layout {
	l := Layout{origin: origin, extent: extent}
	per := 0
	for _, r := range runs {
		per += r.n
	}
	count := per
	for _, d := range dims {
		count *= d.n
	}
	if count == 0 {
		return l
	}
	// Adjacent runs.
	merged := runs[:0:0]
	for _, r := range runs {
		if r.n == 0 {
			continue
		}
		if k := len(merged) - 1; k >= 0 && merged[k].off+merged[k].n == r.off {
			merged[k].n += r.n
			continue
		}
		merged = append(merged, r)
	}
	// Dimensions, innermost first.
	var kept []dim
	for i := len(dims) - 1; i >= 0; i-- {
		d := dims[i]
		switch {
		case d.n == 1:
			continue
		case len(kept) == 0 && len(merged) == 1 && d.stride == merged[0].n:
			merged[0].n *= d.n // the run continues into the next repetition
			continue
		case len(kept) > 0 && d.stride == kept[len(kept)-1].n*kept[len(kept)-1].stride:
			kept[len(kept)-1].n *= d.n
			continue
		}
		kept = append(kept, d)
	}
	slices.Reverse(kept)
	// A single run at a constant offset: fold the offset into the origin.
	if len(merged) == 1 && merged[0].off != 0 {
		l.origin += merged[0].off
		merged[0].off = 0
	}
	l.runs, l.dims, l.count = merged, kept, count
	l.short = true
	for _, r := range merged {
		l.short = l.short && r.n <= shortRun
	}
	for _, r := range merged {
		l.per += r.n
	}
	return l
}

// contiguousRun reports whether l selects one run of consecutive elements,
// and which; an empty layout is the empty run at 0.
func (l *Layout) contiguousRun() (off, n int, ok bool) {
	switch {
	case l.count == 0:
		return 0, 0, true
	case len(l.dims) == 0 && len(l.runs) == 1:
		return l.origin + l.runs[0].off, l.runs[0].n, true
	}
	return 0, 0, false
}

// Pack copies the elements l selects from src into dst, in layout order,
// and returns how many it copied: l.Count(), or len(dst) if that is fewer
// (the first len(dst) of them). src must be at least l.Extent() long, else
// Pack fails with an error wrapping [comm.ErrArg] and copies nothing.
// Consecutive elements are copied a run at a time.
func Pack[T any](dst, src []T, l Layout) (int, error) {
	if len(src) < l.extent {
		return 0, fmt.Errorf("typed: pack: %d elements, layout extent %d: %w", len(src), l.extent, comm.ErrArg)
	}
	n := min(len(dst), l.count)
	walk(dst[:n], src, &l, true)
	return n, nil
}

// Unpack copies packed, elements in layout order, to the places l selects
// in dst, and returns how many it copied: len(packed), or l.Count() if
// that is fewer. dst must be at least l.Extent() long, and l must not
// select an element twice, else Unpack fails with an error wrapping
// [comm.ErrArg] and copies nothing.
func Unpack[T any](dst, packed []T, l Layout) (int, error) {
	if err := l.checkRecv(len(dst)); err != nil {
		return 0, fmt.Errorf("typed: unpack: %w", err)
	}
	n := min(len(packed), l.count)
	walk(packed[:n], dst, &l, false)
	return n, nil
}

// checkRecv checks that l may receive into a slice of length elements. Its
// error wraps [comm.ErrArg] and wants a prefix.
func (l *Layout) checkRecv(length int) error {
	if l.overlap {
		return fmt.Errorf("layout selects some elements more than once: %w", comm.ErrArg)
	}
	if length < l.extent {
		return fmt.Errorf("%d elements, layout extent %d: %w", length, l.extent, comm.ErrArg)
	}
	return nil
}
