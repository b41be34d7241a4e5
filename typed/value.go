package typed

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// Generic forms of the value (gob) path of package comm, for any Go value
// that encoding/gob encodes.

// RecvValue receives a value sent with comm's SendValue and returns it as
// a fresh T (MPI has no such thing: a Recv that returns what it received
// instead of filling a buffer). A message that does not decode into a T
// fails with [comm.ErrType].
func RecvValue[T any](c *comm.Comm, src, tag int) (T, comm.Status, error) {
	var v T
	st, err := c.RecvValue(&v, src, tag)
	return v, st, err
}

// AllreduceValue combines every member's v with op, in rank order
// (op(op(v0, v1), v2)…), and returns the result on every member: the
// values travel gob-encoded (comm's AllgatherValue) and each member
// folds them, so op need not be commutative, and may be any Go function.
func AllreduceValue[T any](c *comm.Comm, v T, op func(a, b T) T) (T, error) {
	var zero T
	var all []T
	if err := c.AllgatherValue(v, &all); err != nil {
		return zero, err
	}
	if op == nil { // checked after the collective, which the others call too
		return zero, fmt.Errorf("typed: AllreduceValue with a nil op: %w", comm.ErrArg)
	}
	return fold(all, op), nil
}

// ReduceValue is AllreduceValue with the result at root only (the zero T
// elsewhere).
func ReduceValue[T any](c *comm.Comm, v T, op func(a, b T) T, root int) (T, error) {
	var zero T
	var all []T
	if err := c.GatherValue(v, &all, root); err != nil || c.Rank() != root {
		return zero, err
	}
	if op == nil { // checked after the collective, which the others call too
		return zero, fmt.Errorf("typed: ReduceValue with a nil op: %w", comm.ErrArg)
	}
	return fold(all, op), nil
}

// fold combines vs with op in order; vs is not empty.
func fold[T any](vs []T, op func(a, b T) T) T {
	acc := vs[0]
	for _, v := range vs[1:] {
		acc = op(acc, v)
	}
	return acc
}
