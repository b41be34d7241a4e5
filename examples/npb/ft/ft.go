package main

import (
	"fmt"
	"io"
	"math"
	"math/cmplx"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"github.com/mpgo/mpgo/typed"
)

// params is a problem: an nx×ny×nz grid, niter time steps, and NPB's
// checksum of every step (none: the run is not verified).
type params struct {
	nx, ny, nz, niter int
	ref               []complex128
}

// classes are NPB 3.4's FT classes (ft.f90, set_class and verify).
var classes = map[npb.Class]params{
	'S': {64, 64, 64, 6, []complex128{
		complex(5.546087004964e+02, 4.845363331978e+02),
		complex(5.546385409189e+02, 4.865304269511e+02),
		complex(5.546148406171e+02, 4.883910722336e+02),
		complex(5.545423607415e+02, 4.901273169046e+02),
		complex(5.544255039624e+02, 4.917475857993e+02),
		complex(5.542683411902e+02, 4.932597244941e+02),
	}},
	'W': {128, 128, 32, 6, []complex128{
		complex(5.673612178944e+02, 5.293246849175e+02),
		complex(5.631436885271e+02, 5.282149986629e+02),
		complex(5.594024089970e+02, 5.270996558037e+02),
		complex(5.560698047020e+02, 5.260027904925e+02),
		complex(5.530898991250e+02, 5.249400845633e+02),
		complex(5.504159734538e+02, 5.239212247086e+02),
	}},
	'A': {256, 256, 128, 6, []complex128{
		complex(5.046735008193e+02, 5.114047905510e+02),
		complex(5.059412319734e+02, 5.098809666433e+02),
		complex(5.069376896287e+02, 5.098144042213e+02),
		complex(5.077892868474e+02, 5.101336130759e+02),
		complex(5.085233095391e+02, 5.104914655194e+02),
		complex(5.091487099959e+02, 5.107917842803e+02),
	}},
	'B': {512, 256, 256, 20, []complex128{
		complex(5.177643571579e+02, 5.077803458597e+02),
		complex(5.154521291263e+02, 5.088249431599e+02),
		complex(5.146409228649e+02, 5.096208912659e+02),
		complex(5.142378756213e+02, 5.101023387619e+02),
		complex(5.139626667737e+02, 5.103976610617e+02),
		complex(5.137423460082e+02, 5.105948019802e+02),
		complex(5.135547056878e+02, 5.107404165783e+02),
		complex(5.133910925466e+02, 5.108576573661e+02),
		complex(5.132470705390e+02, 5.109577278523e+02),
		complex(5.131197729984e+02, 5.110460304483e+02),
		complex(5.130070319283e+02, 5.111252433800e+02),
		complex(5.129070537032e+02, 5.111968077718e+02),
		complex(5.128182883502e+02, 5.112616233064e+02),
		complex(5.127393733383e+02, 5.113203605551e+02),
		complex(5.126691062020e+02, 5.113735928093e+02),
		complex(5.126064276004e+02, 5.114218460548e+02),
		complex(5.125504076570e+02, 5.114656139760e+02),
		complex(5.125002331720e+02, 5.115053595966e+02),
		complex(5.124551951846e+02, 5.115415130407e+02),
		complex(5.124146770029e+02, 5.115744692211e+02),
	}},
	'C': {512, 512, 512, 20, []complex128{
		complex(5.195078707457e+02, 5.149019699238e+02),
		complex(5.155422171134e+02, 5.127578201997e+02),
		complex(5.144678022222e+02, 5.122251847514e+02),
		complex(5.140150594328e+02, 5.121090289018e+02),
		complex(5.137550426810e+02, 5.121143685824e+02),
		complex(5.135811056728e+02, 5.121496764568e+02),
		complex(5.134569343165e+02, 5.121870921893e+02),
		complex(5.133651975661e+02, 5.122193250322e+02),
		complex(5.132955192805e+02, 5.122454735794e+02),
		complex(5.132410471738e+02, 5.122663649603e+02),
		complex(5.131971141679e+02, 5.122830879827e+02),
		complex(5.131605205716e+02, 5.122965869718e+02),
		complex(5.131290734194e+02, 5.123075927445e+02),
		complex(5.131012720314e+02, 5.123166486553e+02),
		complex(5.130760908195e+02, 5.123241541685e+02),
		complex(5.130528295923e+02, 5.123304037599e+02),
		complex(5.130310107773e+02, 5.123356167976e+02),
		complex(5.130103090133e+02, 5.123399592211e+02),
		complex(5.129905029333e+02, 5.123435588985e+02),
		complex(5.129714421109e+02, 5.123465164008e+02),
	}},
}

const (
	root    = 0
	epsilon = 1e-12 // relative error allowed in every checksum
	seed    = 314159265.0
	mult    = 1220703125.0 // 5^13, NPB's a
	alpha   = 1e-6         // the diffusion constant
)

// ft runs NPB FT of class on the ranks of world and writes the report
// (rank 0's) to out.
func ft(world *comm.Comm, class npb.Class, out io.Writer) error {
	p, ok := classes[class]
	if !ok {
		return fmt.Errorf("ft: class %v: want one of S, W, A, B, C", class)
	}
	return bench(world, class, p, out)
}

// bench runs problem p (reported as class) and writes the report to out.
func bench(world *comm.Comm, class npb.Class, p params, out io.Writer) error {
	f, err := newFT(world, p)
	if err != nil {
		return err
	}
	say := func(format string, args ...any) {
		if f.me == root {
			fmt.Fprintf(out, format, args...)
		}
	}
	say("\n\n NAS Parallel Benchmarks 3.4 -- FT Benchmark\n\n")
	say(" No input file inputft.data. Using compiled defaults\n")
	say(" Size                : %4dx%4dx%4d  (class %v)\n", p.nx, p.ny, p.nz, class)
	say(" Iterations          :        %7d\n", p.niter)
	say(" Number of processes :        %7d\n", f.np)
	say(" Processor array     :      %4dx%4d\n", f.np1, f.np2)
	say(" Layout type         :          %5s\n", [...]string{"0D", "1D", "2D"}[f.layout])

	// Run the whole problem once, untimed, so that all data is touched.
	tInit := time.Now()
	f.computeIndexMap()
	f.computeInitialConditions(f.u1)
	f.fftInit()
	if err := f.fft(forward, f.u1, f.u0); err != nil {
		return err
	}
	say("\n Initialization time = %12.4f\n\n", time.Since(tInit).Seconds())

	// Start over; everything is timed this time.
	if err := world.Barrier(); err != nil {
		return err
	}
	t0 := time.Now()
	f.computeIndexMap()
	f.computeInitialConditions(f.u1)
	f.fftInit()
	if err := f.fft(forward, f.u1, f.u0); err != nil {
		return err
	}
	sums := make([]complex128, p.niter)
	for iter := 1; iter <= p.niter; iter++ {
		f.evolve()
		if err := f.fft(inverse, f.u1, f.u2); err != nil {
			return err
		}
		chk, err := f.checksum(f.u2)
		if err != nil {
			return err
		}
		say(" T =%5d     Checksum =%22.12E%22.12E\n", iter, real(chk), imag(chk))
		sums[iter-1] = chk
	}
	verified := f.me == root && verify(sums, p.ref)
	if p.ref != nil {
		if verified {
			say(" Result verification successful\n")
		} else {
			say(" Result verification failed\n")
		}
	}
	t := time.Since(t0).Seconds()
	if f.me != root {
		return nil
	}

	n := float64(p.nx) * float64(p.ny) * float64(p.nz)
	mops := 0.0
	if t != 0 {
		mops = 1e-6 * n * (14.8157 + 7.19641*math.Log(n) +
			(5.23518+7.21113*math.Log(n))*float64(p.niter)) / t
	}
	npb.Result{
		Name:       "FT",
		Class:      class,
		Size:       fmt.Sprintf("%dx%dx%d", p.nx, p.ny, p.nz),
		Iterations: p.niter,
		Time:       time.Duration(t * float64(time.Second)),
		Procs:      f.np,
		Mops:       mops,
		OpType:     "floating point",
		Verified:   verified,
	}.Print(out)
	return nil
}

// verify compares the checksums with NPB's (none: unverified).
func verify(sums, ref []complex128) bool {
	if ref == nil || len(ref) != len(sums) {
		return false
	}
	for i, s := range sums {
		e := cmplx.Abs((s - ref[i]) / ref[i])
		if math.IsNaN(e) || e > epsilon {
			return false
		}
	}
	return true
}

// evolve advances the spectrum one time step: u0 = u0·twiddle, u1 = u0.
func (f *ftRank) evolve() {
	u0, u1, tw := f.u0, f.u1[:len(f.u0)], f.twiddle[:len(f.u0)]
	for i, x := range u0 {
		y := complex(real(x)*tw[i], imag(x)*tw[i])
		u0[i] = y
		u1[i] = y
	}
}

// checksum sums 1024 scattered points of u (layout 1) over all ranks,
// divided by the number of grid points; rank 0 gets it.
func (f *ftRank) checksum(u []complex128) (complex128, error) {
	var chk complex128
	d := f.dims[0]
	for j := 1; j <= 1024; j++ {
		q := j%f.nx + 1
		if q < f.xstart[0] || q > f.xend[0] {
			continue
		}
		r := (3*j)%f.ny + 1
		if r < f.ystart[0] || r > f.yend[0] {
			continue
		}
		s := (5*j)%f.nz + 1
		if s < f.zstart[0] || s > f.zend[0] {
			continue
		}
		chk += u[(q-f.xstart[0])+d[0]*((r-f.ystart[0])+d[1]*(s-f.zstart[0]))]
	}
	n := float64(f.nx) * float64(f.ny) * float64(f.nz)
	f.chk[0] = complex(real(chk)/n, imag(chk)/n)
	if err := f.c.Reduce(f.chk[:1], f.chk[1:], typed.Sum, root); err != nil {
		return 0, err
	}
	return f.chk[1], nil
}
