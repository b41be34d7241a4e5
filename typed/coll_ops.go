package typed

import (
	"github.com/mpgo/mpgo/comm"
	"golang.org/x/exp/constraints"
)

// More reduction operators (MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC,
// MPI_MINLOC). Like Sum, Prod, Max and Min they are commutative; any
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

// The location reductions take slices of Pair[T], which is not a Number
// and so has no Comm of its own; they are functions of c, the Comm of the
// value type. Pairs travel as raw bytes (every Pair is 16 bytes, 8-byte
// aligned: T is at most 8 bytes and Idx is an int), so the element type is
// not checked against the other ranks'.

// ReduceLoc reduces pairs with op (MaxLoc, MinLoc or any associative
// operator on pairs) into root's recv, as [Comm.Reduce].
func ReduceLoc[T Ordered](c *Comm[T], send, recv []Pair[T], op Op[Pair[T]], root int) error {
	return c.c.Reduce(rawBytes(send), rawBytes(recv), comm.Byte, byteOp(op), root)
}

// AllreduceLoc reduces pairs with op into every member's recv, as
// [Comm.Allreduce]:
//
//	me := typed.Pair[float64]{Val: localMax, Idx: w.Rank()}
//	var best [1]typed.Pair[float64]
//	err := typed.AllreduceLoc(c, []typed.Pair[float64]{me}, best[:], typed.MaxLoc)
func AllreduceLoc[T Ordered](c *Comm[T], send, recv []Pair[T], op Op[Pair[T]]) error {
	return c.c.Allreduce(rawBytes(send), rawBytes(recv), comm.Byte, byteOp(op))
}
