package main

import (
	"fmt"
	"math"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"github.com/mpgo/mpgo/typed"
)

// Layouts of the grid over the ranks (NPB's layout_0D, _1D, _2D), and the
// three phases of the 3-D FFT, in which the dimensions held whole are
//
//	phase   0-D   1-D   2-D
//	1       xyz   xyz   xyz   (x FFTs; the data as generated)
//	2       xyz   xyz   yxz   (y FFTs)
//	3       xyz   zxy   zxy   (z FFTs, time evolution)
//
// with the first dimension contiguous; the last two are split over an
// np1×np2 grid of ranks.
const (
	layout0D = iota
	layout1D
	layout2D
)

// FFT directions (NPB's is).
const (
	forward = 1
	inverse = -1
)

// ftRank is one rank's state.
type ftRank struct {
	c          *typed.Comm[complex128]
	slice1     *typed.Comm[complex128] // the ranks with this me1, by me2 (NPB's commslice1)
	slice2     *typed.Comm[complex128] // the ranks with this me2, by me1 (commslice2)
	me, np     int
	nx, ny, nz int
	np1, np2   int
	layout     int

	// dims[phase] are the local extents in phase 1..3 (index 0..2);
	// xstart..zend the global 1-based bounds of the local block.
	dims                   [3][3]int
	xstart, ystart, zstart [3]int
	xend, yend, zend       [3]int

	u0, u1, u2 []complex128
	twiddle    []float64    // exp(-4απ²|k|²) in phase 3
	roots      []complex128 // roots of unity for the FFTs (NPB's u)
	fftblock   int          // lines transformed together
	pad        int          // padded line count of the FFT scratch
	scratch    []complex128 // two blocks of lines for cfftz
	gen        []float64    // one z-plane of random numbers
	chk        [2]complex128
}

// newFT chooses the layout for the ranks of world as NPB does (one rank:
// 0-D; up to nz: 1-D over 1×np; more: 2-D over nz×np/nz), checks that it
// divides the grid, and allocates the fields.
func newFT(world *comm.Comm, p params) (*ftRank, error) {
	np := world.Size()
	f := &ftRank{
		c:  typed.Of[complex128](world),
		me: world.Rank(), np: np,
		nx: p.nx, ny: p.ny, nz: p.nz,
	}
	switch {
	case np == 1:
		f.np1, f.np2, f.layout = 1, 1, layout0D
	case np <= p.nz:
		f.np1, f.np2, f.layout = 1, np, layout1D
	default:
		f.np1, f.np2, f.layout = p.nz, np/p.nz, layout2D
	}
	if err := f.check(p); err != nil {
		return nil, err
	}

	nx, ny, nz := p.nx, p.ny, p.nz
	switch f.layout {
	case layout0D:
		f.dims = [3][3]int{{nx, ny, nz}, {nx, ny, nz}, {nx, ny, nz}}
	case layout1D:
		f.dims = [3][3]int{{nx, ny, nz}, {nx, ny, nz}, {nz, nx, ny}}
	case layout2D:
		f.dims = [3][3]int{{nx, ny, nz}, {ny, nx, nz}, {nz, nx, ny}}
	}
	for i := range 3 {
		f.dims[i][1] /= f.np1
		f.dims[i][2] /= f.np2
	}

	me2, me1 := f.me%f.np2, f.me/f.np2
	s1, err := world.Split(me1, me2)
	if err != nil {
		return nil, err
	}
	s2, err := world.Split(me2, me1)
	if err != nil {
		return nil, err
	}
	f.slice1, f.slice2 = typed.Of[complex128](s1), typed.Of[complex128](s2)

	for i := range 3 {
		f.xstart[i], f.xend[i] = 1, nx
		f.ystart[i], f.yend[i] = 1, ny
		f.zstart[i], f.zend[i] = 1, nz
	}
	switch f.layout {
	case layout1D:
		for i := range 2 {
			f.zstart[i], f.zend[i] = 1+me2*nz/f.np2, (me2+1)*nz/f.np2
		}
		f.ystart[2], f.yend[2] = 1+me2*ny/f.np2, (me2+1)*ny/f.np2
	case layout2D:
		f.ystart[0], f.yend[0] = 1+me1*ny/f.np1, (me1+1)*ny/f.np1
		f.zstart[0], f.zend[0] = 1+me2*nz/f.np2, (me2+1)*nz/f.np2
		f.xstart[1], f.xend[1] = 1+me1*nx/f.np1, (me1+1)*nx/f.np1
		f.zstart[1], f.zend[1] = f.zstart[0], f.zend[0]
		f.xstart[2], f.xend[2] = f.xstart[1], f.xend[1]
		f.ystart[2], f.yend[2] = 1+me2*ny/f.np2, (me2+1)*ny/f.np2
	}

	// Blocks of 16 lines per FFT pass, fewer where a 2-D layout leaves
	// fewer (NPB's fftblock, fftblockpad).
	f.fftblock, f.pad = fftBlock, fftBlock+2
	if f.layout == layout2D {
		f.fftblock = min(fftBlock, f.dims[0][1], f.dims[1][1], f.dims[2][1])
		if f.fftblock != fftBlock {
			f.pad = f.fftblock + 3
		}
	}
	maxdim := max(nx, ny, nz)
	ntdivnp := nx * ny / np * nz
	f.u0 = make([]complex128, ntdivnp)
	f.u1 = make([]complex128, ntdivnp)
	f.u2 = make([]complex128, ntdivnp)
	f.twiddle = make([]float64, ntdivnp)
	f.roots = make([]complex128, maxdim)
	f.scratch = make([]complex128, 2*f.pad*maxdim)
	f.gen = make([]float64, 2*nx*f.dims[0][1])
	return f, nil
}

// check reports a grid that the ranks cannot share out as NPB FT does.
func (f *ftRank) check(p params) error {
	np := f.np
	if np&(np-1) != 0 {
		return fmt.Errorf("ft: %d ranks: NPB FT runs on a power of two", np)
	}
	for _, n := range []int{p.nx, p.ny, p.nz} {
		if n < 2 || n&(n-1) != 0 {
			return fmt.Errorf("ft: grid %dx%dx%d: want powers of two from 2", p.nx, p.ny, p.nz)
		}
	}
	// The dimensions split in some phase: y and z by np2, x and y by np1.
	if p.ny%f.np2 != 0 || p.nz%f.np2 != 0 || p.nx%f.np1 != 0 || p.ny%f.np1 != 0 {
		return fmt.Errorf("ft: %d ranks (%dx%d) do not divide the %dx%dx%d grid", np, f.np1, f.np2, p.nx, p.ny, p.nz)
	}
	return nil
}

// computeIndexMap sets twiddle, in phase 3, to exp(-4απ²(ī²+j̄²+k̄²)),
// where ī is the frequency of global index i: 0, 1, ..., n/2-1, -n/2, ...,
// -1.
func (f *ftRank) computeIndexMap() {
	ap := -4 * alpha * math.Pi * math.Pi
	freq := func(i, start, n int) int { return (i+start-1+n/2)%n - n/2 } // i 0-based
	d := f.dims[2]
	if f.layout == layout0D { // xyz
		for i := range d[0] {
			ii := freq(i, f.xstart[2], f.nx)
			for j := range d[1] {
				jj := freq(j, f.ystart[2], f.ny)
				ij2 := jj*jj + ii*ii
				for k := range d[2] {
					kk := freq(k, f.zstart[2], f.nz)
					f.twiddle[i+d[0]*(j+d[1]*k)] = math.Exp(ap * float64(kk*kk+ij2))
				}
			}
		}
		return
	}
	for i := range d[1] { // zxy
		ii := freq(i, f.xstart[2], f.nx)
		for j := range d[2] {
			jj := freq(j, f.ystart[2], f.ny)
			ij2 := jj*jj + ii*ii
			for k := range d[0] {
				kk := freq(k, f.zstart[2], f.nz)
				f.twiddle[k+d[0]*(i+d[1]*j)] = math.Exp(ap * float64(kk*kk+ij2))
			}
		}
	}
}

// computeInitialConditions fills u (phase 1) with NPB's random numbers,
// two per point (real, imaginary), in global x-y-z order: the generator
// jumps to the block's first line, then plane by plane.
func (f *ftRank) computeInitialConditions(u []complex128) {
	d := f.dims[0]
	start := seed
	npb.Randlc(&start, npb.Pow46(mult, int64(2*f.nx)*int64((f.zstart[0]-1)*f.ny+f.ystart[0]-1)))
	an := npb.Pow46(mult, int64(2*f.nx)*int64(f.ny))
	plane := d[0] * d[1]
	for k := range d[2] {
		x0 := start
		npb.Vranlc(&x0, mult, f.gen)
		uk := u[k*plane : (k+1)*plane]
		for i := range uk {
			uk[i] = complex(f.gen[2*i], f.gen[2*i+1])
		}
		if k != d[2]-1 {
			npb.Randlc(&start, an)
		}
	}
}
