package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestPmm(t *testing.T) {
	tests := []struct{ np, n int }{
		{1, 1},
		{1, 37},
		{2, 64},
		{2, 65}, // uneven: blocks of 33 and 32
		{3, 100},
		{3, 2},   // fewer columns than ranks: rank 2 owns none
		{4, 130}, // 130 = 4·32+2; the A blocks pass the eager limit (130·33·8 B)
		{4, 257},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("np=%d/n=%d", tt.np, tt.n), func(t *testing.T) {
			var out strings.Builder
			res, err := run(tt.np, config{n: tt.n, check: true}, &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !(res.relErr <= res.tol) {
				t.Errorf("relative error %g above %g", res.relErr, res.tol)
			}
			if s := out.String(); !strings.Contains(s, "GFLOP/s") || !strings.HasSuffix(s, " ok\n") {
				t.Errorf("output:\n%s", s)
			}
		})
	}
}

func TestPmmNoCheck(t *testing.T) {
	var out strings.Builder
	res, err := run(2, config{n: 50}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(res.relErr) || !strings.Contains(out.String(), "check skipped") {
		t.Errorf("relErr %g, output:\n%s", res.relErr, out.String())
	}
}

func TestPmmBadArgs(t *testing.T) {
	for _, tt := range []struct{ np, n, reps int }{{2, 0, 1}, {1, -5, 1}, {0, 10, 1}, {2, 10, -1}} {
		var out strings.Builder
		if _, err := run(tt.np, config{n: tt.n, reps: tt.reps, check: true}, &out); err == nil {
			t.Errorf("run(%d, n=%d) succeeded, want an error", tt.np, tt.n)
		}
		if out.Len() != 0 {
			t.Errorf("run(%d, n=%d) wrote %q", tt.np, tt.n, out.String())
		}
	}
}

func TestBlocks(t *testing.T) {
	for _, tt := range []struct{ n, p int }{{10, 3}, {2, 3}, {64, 4}, {1, 1}, {7, 7}} {
		w, f := blocks(tt.n, tt.p)
		sum := 0
		for q := range w {
			if f[q] != sum || w[q] < tt.n/tt.p || w[q] > tt.n/tt.p+1 || w[q] > w[0] {
				t.Errorf("blocks(%d, %d) = %v, %v", tt.n, tt.p, w, f)
			}
			sum += w[q]
		}
		if sum != tt.n {
			t.Errorf("blocks(%d, %d) cover %d columns", tt.n, tt.p, sum)
		}
	}
}

// TestMulAdd checks the tiled kernel against the textbook triple loop on
// sub-blocks with row strides wider than the blocks, sizes across the
// tile and unrolling boundaries.
func TestMulAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 66, 9}, {70, 131, 513}, {5, 0, 4}} {
		m, kd, nc := sz[0], sz[1], sz[2]
		lda, ldb, ldc := kd+3, nc+2, nc+1
		a, b, c := make([]float64, m*lda), make([]float64, kd*ldb), make([]float64, m*ldc)
		for _, s := range [][]float64{a, b, c} {
			for i := range s {
				s[i] = rng.Float64()*2 - 1
			}
		}
		want := append([]float64(nil), c...)
		for i := range m {
			for j := range nc {
				for k := range kd {
					want[i*ldc+j] += a[i*lda+k] * b[k*ldb+j]
				}
			}
		}
		mulAdd(c, ldc, a, lda, b, ldb, m, kd, nc)
		for i := range c {
			if math.Abs(c[i]-want[i]) > 1e-12*float64(kd+1) {
				t.Fatalf("%v: c[%d] = %g, want %g", sz, i, c[i], want[i])
			}
		}
	}
}

func TestMulAddAllocs(t *testing.T) {
	const n = 64
	a, b, c := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
	if allocs := testing.AllocsPerRun(10, func() { mulAdd(c, n, a, n, b, n, n, n, n) }); allocs != 0 {
		t.Errorf("mulAdd allocates %v times", allocs)
	}
}

// BenchmarkMulAdd times the local kernel beside the plain i-k-j loop.
func BenchmarkMulAdd(b *testing.B) {
	for _, n := range []int{256, 1024} {
		x, y, z := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
		for i := range x {
			x[i], y[i] = float64(i%7), float64(i%5)
		}
		flops := 2 * float64(n) * float64(n) * float64(n)
		b.Run(fmt.Sprintf("tiled/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				mulAdd(z, n, x, n, y, n, n, n, n)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("ikj/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				for i := range n {
					zi := z[i*n : i*n+n]
					for k := range n {
						xik := x[i*n+k]
						for j, v := range y[k*n : k*n+n] {
							zi[j] += xik * v
						}
					}
				}
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
