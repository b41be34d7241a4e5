package typed

import "slices"

// Moving the elements of a layout: the loops behind Pack, Unpack and
// layout messages.

// walk moves the first len(packed) elements of layout l between packed and
// strided: gathering them from strided into packed if gather, else
// scattering packed into strided. l has been checked against strided and
// len(packed) ≤ l.count.
//
// Whole patterns are moved by a loop over the innermost dimension with no
// per-element checks; the last, partial pattern, if any, by walkPart.
func walk[T any](packed, strided []T, l *Layout, gather bool) {
	total := len(packed)
	if total == 0 {
		return
	}
	patterns, rest := total/l.per, total%l.per
	base, k := l.origin, 0
	if len(l.dims) == 0 {
		walkPart(packed, strided, l.runs, base, gather)
		return
	}
	nd := len(l.dims)
	inner := l.dims[nd-1]
	var ctr [maxLayoutDims]int // outer dimensions' counters
	for patterns > 0 {
		m := min(inner.n, patterns)
		switch {
		case len(l.runs) == 1 && gather:
			k = gatherRuns(packed, strided, l.runs[0], base, inner.stride, m, k)
		case len(l.runs) == 1:
			k = scatterRuns(packed, strided, l.runs[0], base, inner.stride, m, k)
		case gather && l.short:
			k = gatherShort(packed, strided, l.runs, base, inner.stride, m, k)
		case gather:
			k = gatherPatterns(packed, strided, l.runs, base, inner.stride, m, k)
		case l.short:
			k = scatterShort(packed, strided, l.runs, base, inner.stride, m, k)
		default:
			k = scatterPatterns(packed, strided, l.runs, base, inner.stride, m, k)
		}
		patterns -= m
		if m < inner.n { // patterns ran out inside the innermost dimension
			base += m * inner.stride
			break
		}
		base = l.step(&ctr, nd-2, base) // the next step of the outer dimensions
	}
	if rest > 0 {
		walkPart(packed[k:], strided, l.runs, base, gather)
	}
}

// gatherRuns packs m repetitions of run r, stride apart from base, into
// packed from k, and returns the next k. Runs are copied with copy(); a run
// of one element (a column) is assigned, which costs a fraction of a call
// into memmove.
func gatherRuns[T any](packed, strided []T, r run, base, stride, m, k int) int {
	b := base + r.off
	if r.n == 1 {
		for range m {
			packed[k] = strided[b]
			k++
			b += stride
		}
		return k
	}
	for range m {
		moveRun(packed[k:k+r.n], strided[b:b+r.n])
		k += r.n
		b += stride
	}
	return k
}

// scatterRuns is gatherRuns the other way.
func scatterRuns[T any](packed, strided []T, r run, base, stride, m, k int) int {
	b := base + r.off
	if r.n == 1 {
		for range m {
			strided[b] = packed[k]
			k++
			b += stride
		}
		return k
	}
	for range m {
		moveRun(strided[b:b+r.n], packed[k:k+r.n])
		k += r.n
		b += stride
	}
	return k
}

// gatherPatterns packs m whole patterns of runs, stride apart from base,
// into packed from k, and returns the next k.
func gatherPatterns[T any](packed, strided []T, runs []run, base, stride, m, k int) int {
	for range m {
		for _, r := range runs {
			moveRun(packed[k:k+r.n], strided[base+r.off:base+r.off+r.n])
			k += r.n
		}
		base += stride
	}
	return k
}

// gatherShort is gatherPatterns for patterns whose runs are all short
// (Layout.short): each run moved element by element. A loop with no call
// in it keeps its variables in registers; with copy() in it (even on a path
// not taken) the compiler spills them around the call, which costs more
// than the moves of a short run.
func gatherShort[T any](packed, strided []T, runs []run, base, stride, m, k int) int {
	for range m {
		for _, r := range runs {
			d := packed[k : k+r.n]
			s := strided[base+r.off : base+r.off+r.n]
			for i := range s {
				d[i] = s[i]
			}
			k += r.n
		}
		base += stride
	}
	return k
}

// scatterShort is gatherShort the other way.
func scatterShort[T any](packed, strided []T, runs []run, base, stride, m, k int) int {
	for range m {
		for _, r := range runs {
			d := strided[base+r.off : base+r.off+r.n]
			s := packed[k : k+r.n]
			for i := range s {
				d[i] = s[i]
			}
			k += r.n
		}
		base += stride
	}
	return k
}

// scatterPatterns is gatherPatterns the other way.
func scatterPatterns[T any](packed, strided []T, runs []run, base, stride, m, k int) int {
	for range m {
		for _, r := range runs {
			moveRun(strided[base+r.off:base+r.off+r.n], packed[k:k+r.n])
			k += r.n
		}
		base += stride
	}
	return k
}

// walkPart moves len(packed) elements, at most one pattern's worth, of the
// pattern runs at base.
func walkPart[T any](packed, strided []T, runs []run, base int, gather bool) {
	k := 0
	for _, r := range runs {
		n := min(r.n, len(packed)-k)
		if n == 0 {
			return
		}
		b := base + r.off
		if gather {
			moveRun(packed[k:k+n], strided[b:b+n])
		} else {
			moveRun(strided[b:b+n], packed[k:k+n])
		}
		k += n
	}
}

// moveRun copies src to dst (as long, not overlapping): one run of
// consecutive elements. A run of up to shortRun elements (triangles,
// columns, small blocks) is moved by a plain loop, inline; a longer one by
// copy(), whose call into memmove costs about as much as moving a few
// elements by hand. (Fixed-size array assignments do not help: the
// compiler turns those above 16 bytes into memmove calls too.)
func moveRun[T any](dst, src []T) {
	if len(src) > shortRun {
		copy(dst, src)
		return
	}
	dst = dst[:len(src)]
	for i := range src {
		dst[i] = src[i]
	}
}

// shortRun is the longest run moveRun moves element by element.
const shortRun = 8

// transfer moves the first n elements that layout sl selects in src to the
// first n places that layout dl selects in dst, in layout order: a gather
// and a scatter as one pass, each element moved once, with no packed copy
// between them (a layout message between two ranks of one process). Both
// layouts have been checked against their slices, n ≤ both counts, and dst
// and src do not overlap.
//
// Two layouts of the same shape (the usual case: both ranks use one
// datatype) move run by run at the same offsets; others advance a cursor
// on each side and move the overlap of the current runs.
func transfer[T any](dst []T, dl *Layout, src []T, sl *Layout, n int) {
	if n == 0 {
		return
	}
	if sameShape(dl, sl) {
		walkSame(dst, src, dl, n)
		return
	}
	var d, s runCursor
	d.l, s.l = dl, sl
	do, dn := d.next()
	so, sn := s.next()
	for {
		m := min(dn, sn, n)
		moveRun(dst[do:do+m], src[so:so+m])
		if n -= m; n == 0 {
			return
		}
		if dn -= m; dn == 0 {
			do, dn = d.next()
		} else {
			do += m
		}
		if sn -= m; sn == 0 {
			so, sn = s.next()
		} else {
			so += m
		}
	}
}

// sameShape reports whether a and b select the same elements in the same
// order.
func sameShape(a, b *Layout) bool {
	return a.origin == b.origin && a.count == b.count &&
		slices.Equal(a.runs, b.runs) && slices.Equal(a.dims, b.dims)
}

// walkSame moves the first n elements of layout l from src to the same
// places in dst; it is walk with a strided slice on both sides.
func walkSame[T any](dst, src []T, l *Layout, n int) {
	patterns, rest := n/l.per, n%l.per
	base := l.origin
	if len(l.dims) == 0 {
		moveSamePart(dst, src, l.runs, base, n)
		return
	}
	nd := len(l.dims)
	inner := l.dims[nd-1]
	var ctr [maxLayoutDims]int // outer dimensions' counters
	for patterns > 0 {
		m := min(inner.n, patterns)
		if l.short {
			moveSameShort(dst, src, l.runs, base, inner.stride, m)
		} else {
			moveSamePatterns(dst, src, l.runs, base, inner.stride, m)
		}
		patterns -= m
		if m < inner.n { // patterns ran out inside the innermost dimension
			base += m * inner.stride
			break
		}
		base = l.step(&ctr, nd-2, base)
	}
	if rest > 0 {
		moveSamePart(dst, src, l.runs, base, rest)
	}
}

// moveSamePatterns moves m whole patterns of runs, stride apart from base,
// from src to the same places in dst.
func moveSamePatterns[T any](dst, src []T, runs []run, base, stride, m int) {
	for range m {
		for _, r := range runs {
			o := base + r.off
			moveRun(dst[o:o+r.n], src[o:o+r.n])
		}
		base += stride
	}
}

// moveSameShort is moveSamePatterns for patterns of short runs, element by
// element (see gatherShort).
func moveSameShort[T any](dst, src []T, runs []run, base, stride, m int) {
	for range m {
		for _, r := range runs {
			o := base + r.off
			d, s := dst[o:o+r.n], src[o:o+r.n]
			for i := range s {
				d[i] = s[i]
			}
		}
		base += stride
	}
}

// moveSamePart moves the first n elements, at most one pattern's worth, of
// the pattern runs at base from src to dst.
func moveSamePart[T any](dst, src []T, runs []run, base, n int) {
	for _, r := range runs {
		k := min(r.n, n)
		if k == 0 {
			return
		}
		o := base + r.off
		moveRun(dst[o:o+k], src[o:o+k])
		n -= k
	}
}

// runCursor yields a layout's runs in order, as absolute offsets: the
// pattern's runs, repeated over the dimensions like an odometer. The zero
// value with l set starts at the first run; next must not be called more
// often than the layout has runs.
type runCursor struct {
	l    *Layout
	ctr  [maxLayoutDims]int // the dimensions' counters
	base int                // the current repetition's base, less origin
	i    int                // the next run of the pattern
}

// next returns the offset and length of the next run.
func (c *runCursor) next() (off, n int) {
	if c.i == len(c.l.runs) { // the pattern is done: the next repetition
		c.i = 0
		c.base = c.l.step(&c.ctr, len(c.l.dims)-1, c.base)
	}
	r := c.l.runs[c.i]
	c.i++
	return c.l.origin + c.base + r.off, r.n
}

// step advances the odometer ctr of l's dimensions 0..top by one (top is
// the fastest of them) and returns base moved to match: a dimension that
// wraps around goes back to 0 and carries into the one before it.
func (l *Layout) step(ctr *[maxLayoutDims]int, top, base int) int {
	for d := top; d >= 0; d-- {
		ctr[d]++
		base += l.dims[d].stride
		if ctr[d] < l.dims[d].n {
			break
		}
		base -= l.dims[d].stride * l.dims[d].n
		ctr[d] = 0
	}
	return base
}
