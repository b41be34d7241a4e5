package typed

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
	"golang.org/x/exp/constraints"
)

// Number is the set of number element types: every Go integer, float and
// complex type, named types over them included. The arithmetic reduction
// operators ([Sum], [Prod]) take them; a [Comm] takes them and more.
type Number interface {
	constraints.Integer | constraints.Float | constraints.Complex
}

// Comm sends and receives slices of T over a communicator. Slices travel as
// their memory: at most one copy between the sender's slice and the
// receiver's, none with SendOwned/RecvOwned, and no per-element conversion.
//
// T is any fixed-size type without pointers: a [Number], or a struct,
// array or bool made of numbers, bools and such structs and arrays, as
// MPI's derived datatypes describe them (a particle's coordinates and id,
// a [3]float32, a [Pair]); [Of] panics on any other. Go's constraints
// cannot say "without pointers", so this is checked at run time, once per
// type: see [comm.TypeOf] for the rules and for how a struct type is
// identified (by its memory layout, not its name: two Go types of one
// layout are interchangeable, and the layout must be the same, padding
// included, in every process: one architecture for the whole job).
//
// Messages carry their element type: receiving into another element type
// fails with [comm.ErrType] (a struct type differs from every number
// type, and from every struct type of another layout), receiving as bytes
// ([Of][byte]) always works. The reductions take any [Op] of T; the
// arithmetic operators are for numbers only.
//
// A Comm is small; make one per element type with [Of], and use it through
// the pointer Of returns (it must not be copied after first use). Like the
// communicator under it, it may be used by several goroutines of its rank
// at once, collectives aside (see [comm.Comm]).
type Comm[T any] struct {
	c    *comm.Comm
	t    comm.Type
	size int // bytes per element
}

// Of returns the typed view of c for elements of type T. It panics when T
// cannot be an element type (see [Comm]), with an error that wraps
// [comm.ErrType] and names T and what rules it out; [comm.TypeOf] makes
// the same check without panicking.
func Of[T any](c *comm.Comm) *Comm[T] {
	t, err := comm.TypeOf(reflect.TypeFor[T]())
	if err != nil {
		panic(fmt.Errorf("typed: Of: %w", err))
	}
	return &Comm[T]{c: c, t: t, size: int(unsafe.Sizeof(*new(T)))}
}

// Comm returns the underlying communicator.
func (c *Comm[T]) Comm() *comm.Comm { return c.c }

// Rank returns the calling rank's number.
func (c *Comm[T]) Rank() int { return c.c.Rank() }

// Size returns the number of ranks.
func (c *Comm[T]) Size() int { return c.c.Size() }

// Type returns the element type code messages of T carry.
func (c *Comm[T]) Type() comm.Type { return c.t }

// bytesOf views s as its bytes (no copy).
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// sliceOf views b as elements of T (no copy). b's length must be a multiple
// of the element size, and b must be aligned for T (memory from a []T, or
// from mpgo's pooled storage, is).
func sliceOf[T any](b []byte) ([]T, error) {
	var zero T
	sz := int(unsafe.Sizeof(zero))
	if len(b)%sz != 0 {
		return nil, fmt.Errorf("typed: %d bytes is not a whole number of %T: %w", len(b), zero, comm.ErrType)
	}
	if len(b) == 0 {
		return []T{}, nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%unsafe.Alignof(zero) != 0 {
		s := make([]T, len(b)/sz)
		copy(bytesOf(s), b)
		return s, nil
	}
	return unsafe.Slice((*T)(p), len(b)/sz), nil
}
