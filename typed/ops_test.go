package typed_test

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo/typed"
)

// The built-in operators against one element at a time, at every length
// around their four-element turns, on integers that wrap, floats with NaN
// and signed zeros, and complex numbers; the operand in is left as it was.
func TestOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ints := func(n int) []int8 {
		s := make([]int8, n)
		for i := range s {
			s[i] = int8(rng.IntN(256) - 128)
		}
		return s
	}
	floats := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), rng.NormFloat64()}[rng.IntN(5)]
		}
		return s
	}
	cplx := func(n int) []complex64 {
		s := make([]complex64, n)
		for i := range s {
			s[i] = complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
		}
		return s
	}
	for n := range 20 {
		checkNumberOps(t, n, ints)
		checkNumberOps(t, n, floats)
		checkNumberOps(t, n, cplx)
		checkOrderedOps(t, n, ints)
		checkOrderedOps(t, n, floats)
	}
}

func checkNumberOps[T typed.Number](t *testing.T, n int, gen func(int) []T) {
	t.Helper()
	checkOp(t, "Sum", n, gen, typed.Sum[T], func(a, b T) T { return a + b })
	checkOp(t, "Prod", n, gen, typed.Prod[T], func(a, b T) T { return a * b })
}

func checkOrderedOps[T cmp.Ordered](t *testing.T, n int, gen func(int) []T) {
	t.Helper()
	checkOp(t, "Max", n, gen, typed.Max[T], func(a, b T) T { return max(a, b) })
	checkOp(t, "Min", n, gen, typed.Min[T], func(a, b T) T { return min(a, b) })
}

func checkOp[T any](t *testing.T, name string, n int, gen func(int) []T, op typed.Op[T], one func(a, b T) T) {
	t.Helper()
	inout, in := gen(n), gen(n)
	want, keep := slices.Clone(inout), slices.Clone(in)
	for i := range want {
		want[i] = one(want[i], in[i])
	}
	op(inout, in)
	same := func(a, b []T) bool { // bit for bit: NaN is NaN, -0 is not 0
		return slices.EqualFunc(a, b, func(x, y T) bool { return fmtBits(x) == fmtBits(y) })
	}
	if !same(inout, want) || !same(in, keep) {
		t.Errorf("%s of %d %T: %v, want %v (in %v, was %v)", name, n, in, inout, want, in, keep)
	}
}

// fmtBits is x's memory, as a string to compare.
func fmtBits[T any](x T) string {
	return string(unsafe.Slice((*byte)(unsafe.Pointer(&x)), unsafe.Sizeof(x)))
}

// An operand shorter than inout panics, as an element-wise loop does,
// even where its capacity would cover inout.
func TestOpsShortOperand(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Sum with a short operand did not panic")
		}
	}()
	in := make([]float64, 2, 8)
	typed.Sum(make([]float64, 6), in)
}
