package typed

import "cmp"

// Op is a reduction operator: it combines in into inout element-wise.
// User operators are plain functions of this shape; they must be
// associative (mpgo may apply them in any grouping).
type Op[T any] func(inout, in []T)

// Sum adds in to inout.
func Sum[T Number](inout, in []T) {
	for i := range inout {
		inout[i] += in[i]
	}
}

// Prod multiplies inout by in.
func Prod[T Number](inout, in []T) {
	for i := range inout {
		inout[i] *= in[i]
	}
}

// Max keeps the larger of each pair.
func Max[T cmp.Ordered](inout, in []T) {
	for i := range inout {
		inout[i] = max(inout[i], in[i])
	}
}

// Min keeps the smaller of each pair.
func Min[T cmp.Ordered](inout, in []T) {
	for i := range inout {
		inout[i] = min(inout[i], in[i])
	}
}

// Replace overwrites inout with in (MPI_REPLACE): as an accumulate's op it
// makes [Window.Accumulate] an element-wise atomic Put, and
// [Window.FetchAndOp] an atomic swap. It takes any element type.
func Replace[T any](inout, in []T) { copy(inout, in) }

// NoOp leaves inout as it is (MPI_NO_OP): as the op of
// [Window.GetAccumulate] or [Window.FetchAndOp] it makes an element-wise
// atomic read. It takes any element type.
func NoOp[T any](inout, in []T) {}
