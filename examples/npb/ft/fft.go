package main

import (
	"math"
	"math/bits"
)

// fftBlock is how many lines the 1-D FFTs transform together (NPB's
// fftblock_default): long enough to vectorize, short enough for the cache.
const fftBlock = 16

// fft is the 3-D FFT of x1 into x2 in direction dir, forward from phase 1
// to phase 3 and inverse back, with the transposes of the layout between
// the 1-D FFTs. x1 is overwritten.
func (f *ftRank) fft(dir int, x1, x2 []complex128) error {
	d := f.dims
	if dir == forward {
		switch f.layout {
		case layout0D:
			f.cffts1(forward, d[0], x1, x1)
			f.cffts2(forward, d[1], x1, x1)
			f.cffts3(forward, d[2], x1, x2)
		case layout1D:
			f.cffts1(forward, d[0], x1, x1)
			f.cffts2(forward, d[1], x1, x1)
			if err := f.transposeXYZ(x1, x2); err != nil {
				return err
			}
			f.cffts1(forward, d[2], x2, x2)
		case layout2D:
			f.cffts1(forward, d[0], x1, x1)
			if err := f.transposeXY(0, 1, x1, x2); err != nil {
				return err
			}
			f.cffts1(forward, d[1], x2, x2)
			if err := f.transposeXZ(1, 2, x2, x1); err != nil {
				return err
			}
			f.cffts1(forward, d[2], x1, x2)
		}
		return nil
	}
	switch f.layout {
	case layout0D:
		f.cffts3(inverse, d[2], x1, x1)
		f.cffts2(inverse, d[1], x1, x1)
		f.cffts1(inverse, d[0], x1, x2)
	case layout1D:
		f.cffts1(inverse, d[2], x1, x1)
		if err := f.transposeXYZInverse(x1, x2); err != nil {
			return err
		}
		f.cffts2(inverse, d[1], x2, x2)
		f.cffts1(inverse, d[0], x2, x2)
	case layout2D:
		f.cffts1(inverse, d[2], x1, x1)
		if err := f.transposeXZ(2, 1, x1, x2); err != nil {
			return err
		}
		f.cffts1(inverse, d[1], x2, x2)
		if err := f.transposeXY(1, 0, x2, x1); err != nil {
			return err
		}
		f.cffts1(inverse, d[0], x1, x2)
	}
	return nil
}

// The 1-D FFTs along one dimension of a d[0]×d[1]×d[2] array x into
// xout (which may be x): blocks of lines are copied to scratch, lines
// side by side (line j of the block at j, j+pad, j+2·pad, ...), where
// cfftz transforms them together.

// cffts1 transforms along the first dimension.
func (f *ftRank) cffts1(dir int, d [3]int, x, xout []complex128) {
	d1, d2, d3 := d[0], d[1], d[2]
	y, y2 := f.blocks(d1)
	for k := range d3 {
		for jj := 0; jj < d2; jj += f.fftblock {
			nb := min(f.fftblock, d2-jj)
			for j := range nb {
				line := x[d1*(j+jj+d2*k):][:d1]
				for i, v := range line {
					y[j+f.pad*i] = v
				}
			}
			f.cfftz(dir, d1, nb, y, y2)
			for j := range nb {
				line := xout[d1*(j+jj+d2*k):][:d1]
				for i := range line {
					line[i] = y[j+f.pad*i]
				}
			}
		}
	}
}

// cffts2 transforms along the second dimension.
func (f *ftRank) cffts2(dir int, d [3]int, x, xout []complex128) {
	d1, d2, d3 := d[0], d[1], d[2]
	y, y2 := f.blocks(d2)
	for k := range d3 {
		for ii := 0; ii < d1; ii += f.fftblock {
			nb := min(f.fftblock, d1-ii)
			for j := range d2 {
				copy(y[f.pad*j:][:nb], x[ii+d1*(j+d2*k):][:nb])
			}
			f.cfftz(dir, d2, nb, y, y2)
			for j := range d2 {
				copy(xout[ii+d1*(j+d2*k):][:nb], y[f.pad*j:][:nb])
			}
		}
	}
}

// cffts3 transforms along the third dimension.
func (f *ftRank) cffts3(dir int, d [3]int, x, xout []complex128) {
	d1, d2, d3 := d[0], d[1], d[2]
	y, y2 := f.blocks(d3)
	for j := range d2 {
		for ii := 0; ii < d1; ii += f.fftblock {
			nb := min(f.fftblock, d1-ii)
			for k := range d3 {
				copy(y[f.pad*k:][:nb], x[ii+d1*(j+d2*k):][:nb])
			}
			f.cfftz(dir, d3, nb, y, y2)
			for k := range d3 {
				copy(xout[ii+d1*(j+d2*k):][:nb], y[f.pad*k:][:nb])
			}
		}
	}
}

// blocks returns the two scratch blocks for lines of n points.
func (f *ftRank) blocks(n int) (y, y2 []complex128) {
	return f.scratch[:f.pad*n], f.scratch[f.pad*n : 2*f.pad*n]
}

// fftInit fills roots for FFTs of up to len(roots) points: roots[0] holds
// log2 of that, and roots[ln+i] = exp(iπi/ln) for ln = 1, 2, 4, ... and
// 0 <= i < ln.
func (f *ftRank) fftInit() {
	n := len(f.roots)
	m := bits.Len(uint(n)) - 1
	f.roots[0] = complex(float64(m), 0)
	for ln := 1; ln < n; ln *= 2 {
		t := math.Pi / float64(ln)
		for i := range ln {
			ti := float64(i) * t
			f.roots[ln+i] = complex(math.Cos(ti), math.Sin(ti))
		}
	}
}

// cfftz transforms nb lines of n = 2^m points in x (line j at j,
// j+pad, ...) in direction dir, with y as scratch: the Stockham variant of
// Swarztrauber's FFT, two passes per loop, the result back in x.
func (f *ftRank) cfftz(dir, n, nb int, x, y []complex128) {
	m := bits.Len(uint(n)) - 1
	for l := 1; l <= m; l += 2 {
		fftz2(dir, l, m, n, nb, f.pad, f.roots, x, y)
		if l == m {
			for j := range n {
				copy(x[f.pad*j:][:nb], y[f.pad*j:][:nb])
			}
			return
		}
		fftz2(dir, l+1, m, n, nb, f.pad, f.roots, y, x)
	}
}

// fftz2 is pass l of m of the Stockham FFT of nb lines (stride pad) from
// x into y.
func fftz2(dir, l, m, n, nb, pad int, roots, x, y []complex128) {
	n1 := n / 2
	lk := 1 << (l - 1)
	li := 1 << (m - l)
	lj := 2 * lk
	for i := range li {
		i11 := i * lk
		i12 := i11 + n1
		i21 := i * lj
		i22 := i21 + lk
		u1 := roots[li+i]
		if dir < 1 {
			u1 = complex(real(u1), -imag(u1))
		}
		for k := range lk {
			x11s := x[pad*(i11+k):][:nb]
			x21s := x[pad*(i12+k):][:nb]
			y21s := y[pad*(i21+k):][:nb]
			y22s := y[pad*(i22+k):][:nb]
			for j, x11 := range x11s {
				x21 := x21s[j]
				y21s[j] = x11 + x21
				y22s[j] = u1 * (x11 - x21)
			}
		}
	}
}
