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
