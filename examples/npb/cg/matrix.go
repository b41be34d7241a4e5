package main

import (
	"math"

	"github.com/mpgo/mpgo/examples/npb/internal/npb"
)

// generator is NPB's random number stream for the matrix (tran, amult).
type generator struct{ tran, amult float64 }

func (g *generator) randlc() float64 { return npb.Randlc(&g.tran, g.amult) }

// makea generates this rank's block of NPB's test matrix: the sum over
// i = 1 … na of size_i · v_i·v_iᵀ, where v_i is a random sparse vector
// with about nonzer nonzeros and v_i(i) = 0.5, and size_i falls
// geometrically from 1 to rcond; then rcond − shift on the diagonal.
// Every rank draws the same vectors and keeps the entries in its rows
// firstrow … lastrow and columns firstcol … lastcol, which it stores in
// compressed rows with local column numbers.
func (s *solver) makea(g *generator, p params) {
	n, nonzer := p.na, p.nonzer
	// Room for the entries, as NPB sizes it.
	nprocs := s.nprows * s.npcols
	nz := n*(nonzer+1)/nprocs*(nonzer+1) + nonzer + n*(nonzer+2+nprocs/256)/s.npcols
	arow := make([]int32, 0, nz)
	acol := make([]int32, 0, nz)
	aelt := make([]float64, 0, nz)

	// nn1: the smallest power of two not less than n (at least 2).
	nn1 := 2
	for nn1 < n {
		nn1 *= 2
	}
	v := make([]float64, nonzer+1)
	iv := make([]int, nonzer+1)
	mark := make([]bool, n+1)
	nzloc := make([]int, nonzer)

	size := 1.0
	ratio := math.Pow(rcond, 1/float64(n))
	for iouter := 1; iouter <= n; iouter++ {
		nzv := g.sprnvc(n, nonzer, nn1, v, iv, nzloc, mark)
		nzv = vecset(v, iv, nzv, iouter, 0.5)
		for ivelt := range nzv {
			jcol := iv[ivelt]
			if jcol < s.firstcol || jcol > s.lastcol {
				continue
			}
			scale := size * v[ivelt]
			for ivelt1 := range nzv {
				irow := iv[ivelt1]
				if irow >= s.firstrow && irow <= s.lastrow {
					arow = append(arow, int32(irow))
					acol = append(acol, int32(jcol))
					aelt = append(aelt, v[ivelt1]*scale)
				}
			}
		}
		size *= ratio
	}

	// rcond·I bounds the smallest eigenvalue from below; the shift moves
	// it.
	for i := s.firstrow; i <= s.lastrow; i++ {
		if i >= s.firstcol && i <= s.lastcol {
			arow = append(arow, int32(i))
			acol = append(acol, int32(i))
			aelt = append(aelt, rcond-p.shift)
		}
	}
	s.sparse(n, arow, acol, aelt)
}

// sparse turns the triples (arow, acol, aelt) into compressed rows,
// adding up duplicates and dropping zeros, in NPB's order (a row's
// entries in the order their columns first became nonzero).
func (s *solver) sparse(n int, arow, acol []int32, aelt []float64) {
	nrows := s.lastrow - s.firstrow + 1
	first := int32(s.firstrow)

	// Bucket sort of the triples by row.
	rowstr := make([]int32, nrows+1)
	for _, r := range arow {
		rowstr[r-first+1]++
	}
	for j := 1; j <= nrows; j++ {
		rowstr[j] += rowstr[j-1]
	}
	a := make([]float64, len(aelt))
	colidx := make([]int32, len(acol))
	for k, r := range arow {
		j := rowstr[r-first]
		a[j] = aelt[k]
		colidx[j] = acol[k]
		rowstr[r-first]++
	}
	copy(rowstr[1:], rowstr[:nrows])
	rowstr[0] = 0

	// Sum the duplicates of each row in place.
	x := make([]float64, n+1)
	mark := make([]bool, n+1)
	nzloc := make([]int32, n)
	nza := int32(0)
	start := rowstr[0]
	for j := range nrows {
		nzrow := 0
		for k := start; k < rowstr[j+1]; k++ {
			i := colidx[k]
			x[i] += a[k]
			if !mark[i] && x[i] != 0 {
				mark[i] = true
				nzloc[nzrow] = i
				nzrow++
			}
		}
		for _, i := range nzloc[:nzrow] {
			mark[i] = false
			xi := x[i]
			x[i] = 0
			if xi != 0 {
				a[nza] = xi
				colidx[nza] = i
				nza++
			}
		}
		start = rowstr[j+1]
		rowstr[j+1] = nza
	}

	// Global columns firstcol … lastcol become local 0 … ncols-1.
	for k := range colidx[:nza] {
		colidx[k] -= int32(s.firstcol)
	}
	s.rowstr = rowstr
	s.colidx = colidx[:nza:nza]
	s.a = a[:nza:nza]
}

// sprnvc draws a random sparse vector of n elements with nz nonzeros
// into (v, iv): values and positions (1 … n), positions distinct.
// nzloc and mark are workspace; mark is all false on entry and on return.
func (g *generator) sprnvc(n, nz, nn1 int, v []float64, iv, nzloc []int, mark []bool) int {
	nzv := 0
	for nzv < nz {
		vecelt := g.randlc()
		// A position in 1 … nn1, portably; those beyond n are redrawn.
		i := int(float64(nn1)*g.randlc()) + 1
		if i > n || mark[i] {
			continue
		}
		mark[i] = true
		nzloc[nzv] = i
		v[nzv] = vecelt
		iv[nzv] = i
		nzv++
	}
	for _, i := range nzloc[:nzv] {
		mark[i] = false
	}
	return nzv
}

// vecset sets element i of the sparse vector (v, iv) with nzv nonzeros
// to val, adding it if absent, and returns the new number of nonzeros.
func vecset(v []float64, iv []int, nzv, i int, val float64) int {
	set := false
	for k := range nzv {
		if iv[k] == i {
			v[k] = val
			set = true
		}
	}
	if !set {
		v[nzv] = val
		iv[nzv] = i
		nzv++
	}
	return nzv
}
