package typed

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
	"golang.org/x/exp/constraints"
)

// Number is the set of element types a Comm carries: every Go integer,
// float and complex type, named types over them included.
type Number interface {
	constraints.Integer | constraints.Float | constraints.Complex
}

// Comm sends and receives slices of T over a communicator. Slices travel as
// their memory: at most one copy between the sender's slice and the
// receiver's, none with SendOwned/RecvOwned, and no per-element conversion.
// Messages carry their element type: receiving into another numeric type
// fails with [comm.ErrType], receiving as bytes ([Of][byte]) always works.
//
// A Comm is small; make one per element type with [Of], and use it through
// the pointer Of returns (it must not be copied after first use). Like the
// communicator under it, it may be used by several goroutines of its rank
// at once, collectives aside (see [comm.Comm]).
type Comm[T Number] struct {
	c    *comm.Comm
	t    comm.Type
	size int // bytes per element

	// The reduction operators last turned into comm.Ops, so that calls
	// with the same few Ops (the usual case: typed.Sum[float64], a Max)
	// allocate no closure. Entries are replaced whole, atomically: two
	// goroutines that call collectives at once (which comm refuses with
	// ErrConcurrent, after this lookup) never see half an entry.
	ops  [4]atomic.Pointer[cachedOp[T]]
	next atomic.Uint32 // entries replaced so far: the next to replace, modulo len(ops)
}

// cachedOp is an Op and the comm.Op made of it.
type cachedOp[T Number] struct {
	op Op[T] // keeps the func value alive, so its word is not reused
	b  comm.Op
}

// Of returns the typed view of c for elements of type T.
func Of[T Number](c *comm.Comm) *Comm[T] {
	t := typeOf[T]()
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

func typeOf[T Number]() comm.Type {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Uint8:
		return comm.Byte
	case reflect.Int8:
		return comm.Int8
	case reflect.Int16:
		return comm.Int16
	case reflect.Int32:
		return comm.Int32
	case reflect.Int64:
		return comm.Int64
	case reflect.Int:
		return comm.Int
	case reflect.Uint16:
		return comm.Uint16
	case reflect.Uint32:
		return comm.Uint32
	case reflect.Uint64:
		return comm.Uint64
	case reflect.Uint:
		return comm.Uint
	case reflect.Uintptr:
		return comm.Uintptr
	case reflect.Float32:
		return comm.Float32
	case reflect.Float64:
		return comm.Float64
	case reflect.Complex64:
		return comm.Complex64
	case reflect.Complex128:
		return comm.Complex128
	}
	panic(fmt.Sprintf("typed: unsupported element type %v", reflect.TypeFor[T]()))
}

// bytesOf views s as its bytes (no copy).
func bytesOf[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// sliceOf views b as elements of T (no copy). b's length must be a multiple
// of the element size, and b must be aligned for T (memory from a []T, or
// from mpgo's pooled storage, is).
func sliceOf[T Number](b []byte) ([]T, error) {
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
