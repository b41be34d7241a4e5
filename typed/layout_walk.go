package typed

// Moving the elements of a layout: the loops behind Pack, Unpack and
// layout messages.

// walk moves the first len(packed) elements of layout l between packed and
// strided: gathering them from strided into packed if gather, else
// scattering packed into strided. l has been checked against strided and
// len(packed) ≤ l.count.
//
// Whole patterns are moved by a loop over the innermost dimension with no
// per-element checks; the last, partial pattern, if any, by walkPart.
func walk[T Number](packed, strided []T, l *Layout, gather bool) {
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
		case gather:
			k = gatherPatterns(packed, strided, l.runs, base, inner.stride, m, k)
		default:
			k = scatterPatterns(packed, strided, l.runs, base, inner.stride, m, k)
		}
		patterns -= m
		if m < inner.n { // patterns ran out inside the innermost dimension
			base += m * inner.stride
			break
		}
		// The next step of the outer dimensions.
		for d := nd - 2; d >= 0; d-- {
			ctr[d]++
			base += l.dims[d].stride
			if ctr[d] < l.dims[d].n {
				break
			}
			base -= l.dims[d].stride * l.dims[d].n
			ctr[d] = 0
		}
	}
	if rest > 0 {
		walkPart(packed[k:], strided, l.runs, base, gather)
	}
}

// gatherRuns packs m repetitions of run r, stride apart from base, into
// packed from k, and returns the next k. Runs are copied with copy(); a run
// of one element (a column) is assigned, which costs a fraction of a call
// into memmove.
func gatherRuns[T Number](packed, strided []T, r run, base, stride, m, k int) int {
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
		copy(packed[k:k+r.n], strided[b:b+r.n])
		k += r.n
		b += stride
	}
	return k
}

// scatterRuns is gatherRuns the other way.
func scatterRuns[T Number](packed, strided []T, r run, base, stride, m, k int) int {
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
		copy(strided[b:b+r.n], packed[k:k+r.n])
		k += r.n
		b += stride
	}
	return k
}

// gatherPatterns packs m whole patterns of runs, stride apart from base,
// into packed from k, and returns the next k.
func gatherPatterns[T Number](packed, strided []T, runs []run, base, stride, m, k int) int {
	for range m {
		for _, r := range runs {
			copy(packed[k:k+r.n], strided[base+r.off:base+r.off+r.n])
			k += r.n
		}
		base += stride
	}
	return k
}

// scatterPatterns is gatherPatterns the other way.
func scatterPatterns[T Number](packed, strided []T, runs []run, base, stride, m, k int) int {
	for range m {
		for _, r := range runs {
			copy(strided[base+r.off:base+r.off+r.n], packed[k:k+r.n])
			k += r.n
		}
		base += stride
	}
	return k
}

// walkPart moves len(packed) elements, at most one pattern's worth, of the
// pattern runs at base.
func walkPart[T Number](packed, strided []T, runs []run, base int, gather bool) {
	k := 0
	for _, r := range runs {
		n := min(r.n, len(packed)-k)
		if n == 0 {
			return
		}
		b := base + r.off
		if gather {
			copy(packed[k:k+n], strided[b:b+n])
		} else {
			copy(strided[b:b+n], packed[k:k+n])
		}
		k += n
	}
}
