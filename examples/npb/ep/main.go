// EP is the Embarrassingly Parallel kernel of the NAS Parallel Benchmarks
// (NPB 3.4, MPI version) on mpgo: every rank generates its share of 2^(M+1)
// uniform pseudorandom numbers in batches of 2^17, turns pairs of them
// into Gaussian deviates by the Marsaglia polar (acceptance-rejection)
// method, sums the deviates and counts them in square annuli; three
// Allreduce calls combine the ranks' sums and counts. Verification
// compares the sums with NPB's reference values for the class (relative
// error at most 1e-8).
//
// Run it with
//
//	go run ./examples/npb/ep -class S -np 4
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o ep ./examples/npb/ep && mpiexec -n 4 ./ep -class S
//
// Any number of ranks works, up to the number of batches (2^(M-16): 256
// for class S).
package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"github.com/mpgo/mpgo/typed"
)

// The generator's multiplier and seed, and the shape of the problem: 2^mk
// pairs per batch, counts for annuli 0..nq-1.
const (
	mult    = 1220703125.0
	seed    = 271828183.0
	mk      = 16
	nk      = 1 << mk
	nq      = 10
	epsilon = 1e-8
)

// params are a class's M (log2 of the number of pairs) and reference
// sums.
type params struct {
	m      int
	sx, sy float64
}

var classes = map[npb.Class]params{
	'S': {24, -3.247834652034740e+3, -6.958407078382297e+3},
	'W': {25, -2.863319731645753e+3, -6.320053679109499e+3},
	'A': {28, -4.295875165629892e+3, -1.580732573678431e+4},
	'B': {30, 4.033815542441498e+4, -2.660669192809235e+4},
	'C': {32, 4.764367927995374e+4, -8.084072988043731e+4},
	'D': {36, 1.982481200946593e+5, -1.020596636361769e+5},
	'E': {40, -5.319717441530e+05, -3.688834557731e+05},
}

func main() { npb.Main("ep", 'S', ep) }

// run runs EP of class on np goroutine ranks and returns rank 0's result.
func run(np int, class npb.Class, out io.Writer) (npb.Result, error) {
	return npb.Run(np, class, out, ep)
}

// ep runs the kernel on the ranks of world; rank 0 writes NPB's report
// to out and returns the result (other ranks return a zero Result). A
// failed verification is an error on rank 0, after the report.
func ep(world *comm.Comm, class npb.Class, out io.Writer) (npb.Result, error) {
	p, ok := classes[class]
	if !ok {
		return npb.Result{}, fmt.Errorf("ep: class %v: unknown", class)
	}
	rank, size := world.Rank(), world.Size()
	nn := int64(1) << (p.m - mk) // batches in all
	if nn < int64(size) {
		// NPB aborts on the ranks left without a batch; every rank can
		// tell, so all of them fail alike before any output.
		return npb.Result{}, fmt.Errorf("ep: class %v has %d batches: too many ranks (%d)", class, nn, size)
	}

	// Batches per rank: the first nn mod size ranks take one more.
	np := nn / int64(size)
	large := nn % int64(size)
	var kOffset int64
	if int64(rank) < large {
		np++
		kOffset = int64(rank) * np
	} else {
		kOffset = large*(np+1) + (int64(rank)-large)*np
	}

	if rank == 0 {
		fmt.Fprintf(out, "\n NAS Parallel Benchmarks 3.4 -- EP Benchmark (mpgo)\n\n")
		fmt.Fprintf(out, " Number of random numbers generated: %15d  (class %v)\n", int64(1)<<(p.m+1), class)
		fmt.Fprintf(out, " Total number of processes:          %15d\n\n", size)
	}

	// Touch the batch buffer before timing, as NPB does.
	x := make([]float64, 2*nk)
	for i := range x {
		x[i] = -1e99
	}
	c := typed.Of[float64](world)
	if err := c.Barrier(); err != nil {
		return npb.Result{}, err
	}
	start := time.Now()

	// an = mult^(2·nk): one batch's worth of steps of the generator.
	an := npb.Pow46(mult, 2*nk)
	var sx, sy float64
	var q [nq]float64
	for k := range np {
		// The seed of batch kk is seed·an^kk: jump straight there.
		t1 := seed
		npb.Randlc(&t1, npb.Pow46(an, kOffset+k))
		npb.Vranlc(&t1, mult, x)
		sx, sy = gaussPairs(x, &q, sx, sy)
	}

	// Combine the ranks' sums and counts, as NPB does, in three calls.
	sums := []float64{sx, sy}
	tot := make([]float64, nq)
	if err := c.Allreduce(sums[0:1], tot[0:1], typed.Sum); err != nil {
		return npb.Result{}, err
	}
	sx = tot[0]
	if err := c.Allreduce(sums[1:2], tot[0:1], typed.Sum); err != nil {
		return npb.Result{}, err
	}
	sy = tot[0]
	if err := c.Allreduce(q[:], tot, typed.Sum); err != nil {
		return npb.Result{}, err
	}
	var gc float64
	for i := range q {
		q[i] = tot[i]
		gc += q[i]
	}
	elapsed := time.Since(start).Seconds()

	tm := []float64{elapsed}
	if err := c.Allreduce(tm, tm, typed.Max); err != nil {
		return npb.Result{}, err
	}
	if rank != 0 {
		return npb.Result{}, nil
	}

	verified := math.Abs((sx-p.sx)/p.sx) <= epsilon && math.Abs((sy-p.sy)/p.sy) <= epsilon
	fmt.Fprintf(out, "EP Benchmark Results:\n\n")
	fmt.Fprintf(out, "CPU Time =%10.3f\n", tm[0])
	fmt.Fprintf(out, "N = 2^%5d\n", p.m)
	fmt.Fprintf(out, "No. Gaussian Pairs =%15.0f\n", gc)
	fmt.Fprintf(out, "Sums = %25.15e %25.15e\n", sx, sy)
	fmt.Fprintf(out, "Counts:\n")
	for i, v := range q {
		fmt.Fprintf(out, "%3d%15.0f\n", i, v)
	}
	res := npb.Result{
		Name:       "EP",
		Class:      class,
		Size:       fmt.Sprint(int64(1) << (p.m + 1)),
		Iterations: 0,
		Time:       time.Duration(tm[0] * float64(time.Second)),
		Procs:      size,
		Mops:       math.Ldexp(1, p.m+1) / tm[0] / 1e6,
		OpType:     "Random numbers generated",
		Verified:   verified,
	}
	res.Print(out)
	if !verified {
		return res, fmt.Errorf("ep: class %v: verification failed: sx=%.15e (want %.15e), sy=%.15e (want %.15e)",
			class, sx, p.sx, sy, p.sy)
	}
	return res, nil
}

// gaussPairs turns the uniform numbers in x, taken in pairs, into
// Gaussian deviates (X, Y) by the acceptance-rejection method, counts
// each accepted pair in q by the square annulus max(|X|,|Y|) falls in,
// and returns sx and sy with the deviates added (in NPB's order: one
// running sum across all batches).
func gaussPairs(x []float64, q *[nq]float64, sx, sy float64) (float64, float64) {
	for i := 0; i+1 < len(x); i += 2 {
		x1 := 2*x[i] - 1
		x2 := 2*x[i+1] - 1
		t1 := x1*x1 + x2*x2
		if t1 <= 1 {
			t2 := math.Sqrt(-2 * math.Log(t1) / t1)
			t3 := x1 * t2
			t4 := x2 * t2
			l := int(max(math.Abs(t3), math.Abs(t4)))
			q[l]++
			sx += t3
			sy += t4
		}
	}
	return sx, sy
}
