package typed

import "cmp"

// Op is a reduction operator: it combines in into inout element-wise.
// User operators are plain functions of this shape; they must be
// associative (mpgo may apply them in any grouping).
type Op[T any] func(inout, in []T)

// operand returns in cut to inout's length, so that the loops of the
// operators below check their bounds once. A shorter in panics with an
// index out of range, as an element-wise loop would (cutting to
// len(inout) alone would read past its length, up to its capacity).
func operand[T any](inout, in []T) []T {
	if len(in) < len(inout) {
		_ = in[len(inout)-1]
	}
	return in[:len(inout)]
}

// Sum adds in to inout.
func Sum[T Number](inout, in []T) {
	in = operand(inout, in) // one bounds check, not one an element
	i := 0
	for ; i+4 <= len(inout); i += 4 { // four independent elements a turn
		a, b := inout[i:i+4:i+4], in[i:i+4:i+4]
		a[0] += b[0]
		a[1] += b[1]
		a[2] += b[2]
		a[3] += b[3]
	}
	for ; i < len(inout); i++ {
		inout[i] += in[i]
	}
}

// Prod multiplies inout by in.
func Prod[T Number](inout, in []T) {
	in = operand(inout, in) // as Sum
	i := 0
	for ; i+4 <= len(inout); i += 4 {
		a, b := inout[i:i+4:i+4], in[i:i+4:i+4]
		a[0] *= b[0]
		a[1] *= b[1]
		a[2] *= b[2]
		a[3] *= b[3]
	}
	for ; i < len(inout); i++ {
		inout[i] *= in[i]
	}
}

// Max keeps the larger of each pair.
func Max[T cmp.Ordered](inout, in []T) {
	in = operand(inout, in) // as Sum
	i := 0
	for ; i+4 <= len(inout); i += 4 {
		a, b := inout[i:i+4:i+4], in[i:i+4:i+4]
		a[0] = max(a[0], b[0])
		a[1] = max(a[1], b[1])
		a[2] = max(a[2], b[2])
		a[3] = max(a[3], b[3])
	}
	for ; i < len(inout); i++ {
		inout[i] = max(inout[i], in[i])
	}
}

// Min keeps the smaller of each pair.
func Min[T cmp.Ordered](inout, in []T) {
	in = operand(inout, in) // as Sum
	i := 0
	for ; i+4 <= len(inout); i += 4 {
		a, b := inout[i:i+4:i+4], in[i:i+4:i+4]
		a[0] = min(a[0], b[0])
		a[1] = min(a[1], b[1])
		a[2] = min(a[2], b[2])
		a[3] = min(a[3], b[3])
	}
	for ; i < len(inout); i++ {
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
