package main

// The global transposes of NPB FT: a local transpose that makes the
// block for each destination contiguous, an Alltoall, and a local
// reordering of what arrived ("finish").

// transBlock is the tile edge of the cache-blocked local transposes (NPB's
// transblock).
const transBlock = 32

// transposeXYZ takes phase 2 (xyz, z split) to phase 3 (zxy, y split) in
// the 1-D layout (NPB's transpose_xy_z); xin is overwritten.
func (f *ftRank) transposeXYZ(xin, xout []complex128) error {
	d := f.dims[1]
	n1, n2 := d[0]*d[1], d[2]
	transpose2Local(n1, n2, xin, xout)
	if err := f.slice1.Alltoall(xout, xin); err != nil {
		return err
	}
	f.transpose2Finish(n1, n2, xin, xout)
	return nil
}

// transposeXYZInverse takes phase 3 back to phase 2 in the 1-D layout
// (NPB's transpose_x_yz); xin is overwritten.
func (f *ftRank) transposeXYZInverse(xin, xout []complex128) error {
	d := f.dims[2]
	n1, n2 := d[0], d[1]*d[2]
	transpose2Local(n1, n2, xin, xout)
	if err := f.slice1.Alltoall(xout, xin); err != nil {
		return err
	}
	f.transpose2Finish(n1, n2, xin, xout)
	return nil
}

// transpose2Local sets out (n2×n1) to the transpose of in (n1×n2), in
// tiles when both are long enough.
func transpose2Local(n1, n2 int, in, out []complex128) {
	if n1 < transBlock || n2 < transBlock {
		for j := range n2 {
			for i, v := range in[n1*j:][:n1] {
				out[j+n2*i] = v
			}
		}
		return
	}
	// Tile by tile, each tile written line by line: writing down a
	// column instead strides by n2, a power of two, and thrashes the
	// cache (7x slower for 32×8192).
	for j0 := 0; j0 < n2; j0 += transBlock {
		j1 := min(j0+transBlock, n2)
		for i0 := 0; i0 < n1; i0 += transBlock {
			for i := i0; i < min(i0+transBlock, n1); i++ {
				src := in[i:]
				for jj := range out[n2*i+j0 : n2*i+j1] {
					out[n2*i+j0+jj] = src[n1*(j0+jj)]
				}
			}
		}
	}
}

// transpose2Finish interleaves what came from the np2 ranks: in holds np2
// blocks of n2×(n1/np2), out is (n2·np2)×(n1/np2).
func (f *ftRank) transpose2Finish(n1, n2 int, in, out []complex128) {
	np2 := f.np2
	cols := n1 / np2
	for p := range np2 {
		for j := range cols {
			copy(out[p*n2+n2*np2*j:][:n2], in[n2*(j+cols*p):][:n2])
		}
	}
}

// transposeXZ moves between phases l1 and l2 (1 and 2, 0-based) of the
// 2-D layout, swapping the first and third dimensions among the ranks of
// a row (NPB's transpose_x_z); xin is overwritten.
func (f *ftRank) transposeXZ(l1, l2 int, xin, xout []complex128) error {
	d := f.dims[l1]
	transposeXZLocal(d, xin, xout)
	if err := f.slice1.Alltoall(xout, xin); err != nil {
		return err
	}
	// xin is (d1/np2)×d2×d3 blocks of phase l2 from each rank.
	e := f.dims[l2]
	w := e[0] / f.np2
	for p := range f.np2 {
		for k := range e[2] {
			for j := range e[1] {
				copy(xout[p*w+e[0]*(j+e[1]*k):][:w], xin[w*(j+e[1]*(k+e[2]*p)):][:w])
			}
		}
	}
	return nil
}

// transposeXZLocal sets out (d3×d2×d1) to in (d1×d2×d3) with the first
// and third dimensions swapped.
func transposeXZLocal(d [3]int, in, out []complex128) {
	d1, d2, d3 := d[0], d[1], d[2]
	for j := range d2 {
		for k0 := 0; k0 < d3; k0 += transBlock {
			k1 := min(k0+transBlock, d3)
			for i0 := 0; i0 < d1; i0 += transBlock {
				for i := i0; i < min(i0+transBlock, d1); i++ {
					dst := out[d3*(j+d2*i)+k0 : d3*(j+d2*i)+k1]
					src := in[i+d1*j:]
					for kk := range dst {
						dst[kk] = src[d1*d2*(k0+kk)]
					}
				}
			}
		}
	}
}

// transposeXY moves between phases l1 and l2 (0 and 1, 0-based) of the
// 2-D layout, swapping the first two dimensions among the ranks of a
// column (NPB's transpose_x_y); xin is overwritten.
func (f *ftRank) transposeXY(l1, l2 int, xin, xout []complex128) error {
	d := f.dims[l1]
	d1, d2, d3 := d[0], d[1], d[2]
	// (d1, d2, d3) -> (d2, d3, d1): each destination's block of the
	// first dimension becomes contiguous.
	for k := range d3 {
		for i := range d1 {
			for j := range d2 {
				xout[j+d2*(k+d3*i)] = xin[i+d1*(j+d2*k)]
			}
		}
	}
	if err := f.slice2.Alltoall(xout, xin); err != nil {
		return err
	}
	// xin is (d1/np1)×d3×d2 blocks of phase l2 from each rank.
	e := f.dims[l2]
	w := e[0] / f.np1
	for p := range f.np1 {
		for k := range e[2] {
			for j := range e[1] {
				dst := xout[p*w+e[0]*(j+e[1]*k):][:w]
				for i := range dst {
					dst[i] = xin[i+w*(k+e[2]*(j+e[1]*p))]
				}
			}
		}
	}
	return nil
}
