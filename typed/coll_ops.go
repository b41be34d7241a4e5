package typed

import (
	"fmt"

	"golang.org/x/exp/constraints"

	"github.com/mpgo/mpgo/comm"
)

// More reduction operators (MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND,
// MPI_LOR, MPI_LXOR, MPI_MAXLOC, MPI_MINLOC). Like Sum, Prod, Max and Min they are commutative; any
// associative func(inout, in []T) works too (see [Op]): mpgo reduces in
// rank order, inout holding the lower ranks' contribution.

// BAnd keeps the bitwise and of each pair.
func BAnd[T constraints.Integer](inout, in []T) {
	for i := range inout {
		inout[i] &= in[i]
	}
}

// BOr keeps the bitwise or of each pair.
func BOr[T constraints.Integer](inout, in []T) {
	for i := range inout {
		inout[i] |= in[i]
	}
}

// BXor keeps the bitwise exclusive or of each pair.
func BXor[T constraints.Integer](inout, in []T) {
	for i := range inout {
		inout[i] ^= in[i]
	}
}

// LAnd keeps whether both elements are true, on integers where 0 is
// false and anything else true (MPI_LAND): 1 or 0.
func LAnd[T constraints.Integer](inout, in []T) {
	for i := range inout {
		inout[i] = truth[T](inout[i] != 0 && in[i] != 0)
	}
}

// LOr keeps whether either element is true (MPI_LOR): 1 or 0.
func LOr[T constraints.Integer](inout, in []T) {
	for i := range inout {
		inout[i] = truth[T](inout[i] != 0 || in[i] != 0)
	}
}

// LXor keeps whether exactly one element is true (MPI_LXOR): 1 or 0.
func LXor[T constraints.Integer](inout, in []T) {
	for i := range inout {
		inout[i] = truth[T]((inout[i] != 0) != (in[i] != 0))
	}
}

// truth is b as an integer: 1 or 0.
func truth[T constraints.Integer](b bool) T {
	if b {
		return 1
	}
	return 0
}

// ReduceLocal combines in and inout with op on the calling rank alone, as
// MPI_Reduce_local does: inout becomes in op inout, in being the earlier
// operand (the lower ranks' side in a reduction, which matters for an op
// that does not commute). The slices must be of one length.
func ReduceLocal[T any](in, inout []T, op Op[T]) error {
	if op == nil {
		return fmt.Errorf("typed: ReduceLocal with a nil op: %w", comm.ErrArg)
	}
	if len(in) != len(inout) {
		return fmt.Errorf("typed: ReduceLocal of %d elements into %d: %w", len(in), len(inout), comm.ErrArg)
	}
	tmp := append([]T(nil), in...)
	op(tmp, inout)
	copy(inout, tmp)
	return nil
}

// Ordered is the element types whose values [Pair] carries.
type Ordered interface {
	constraints.Integer | constraints.Float
}

// Pair is a value with an index, the element of the location reductions
// ([MaxLoc], [MinLoc]) as MPI's MPI_DOUBLE_INT and kin: typically a rank's
// local extreme and where it is (a rank, or a global index).
type Pair[T Ordered] struct {
	Val T
	Idx int
}

// MaxLoc keeps, of each pair of pairs, the one with the larger value, and
// of equal values the smaller index (MPI_MAXLOC).
func MaxLoc[T Ordered](inout, in []Pair[T]) {
	for i := range inout {
		if in[i].Val > inout[i].Val || in[i].Val == inout[i].Val && in[i].Idx < inout[i].Idx {
			inout[i] = in[i]
		}
	}
}

// MinLoc keeps, of each pair of pairs, the one with the smaller value, and
// of equal values the smaller index (MPI_MINLOC).
func MinLoc[T Ordered](inout, in []Pair[T]) {
	for i := range inout {
		if in[i].Val < inout[i].Val || in[i].Val == inout[i].Val && in[i].Idx < inout[i].Idx {
			inout[i] = in[i]
		}
	}
}

// The location reductions are functions of c, the Comm of the value type,
// that reduce slices of Pair[T] on the Comm of the pairs (Of[Pair[T]],
// a struct element type: a Pair of another T fails with comm.ErrType).

// ReduceLoc reduces pairs with op (MaxLoc, MinLoc or any associative
// operator on pairs) into root's recv, as [Comm.Reduce].
func ReduceLoc[T Ordered](c *Comm[T], send, recv []Pair[T], op Op[Pair[T]], root int) error {
	return Of[Pair[T]](c.c).Reduce(send, recv, op, root)
}

// AllreduceLoc reduces pairs with op into every member's recv, as
// [Comm.Allreduce]:
//
//	me := typed.Pair[float64]{Val: localMax, Idx: w.Rank()}
//	var best [1]typed.Pair[float64]
//	err := typed.AllreduceLoc(c, []typed.Pair[float64]{me}, best[:], typed.MaxLoc)
func AllreduceLoc[T Ordered](c *Comm[T], send, recv []Pair[T], op Op[Pair[T]]) error {
	return Of[Pair[T]](c.c).Allreduce(send, recv, op)
}
