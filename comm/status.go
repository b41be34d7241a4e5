package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Wildcards for receives and probes.
const (
	// AnySource matches a message from any rank.
	AnySource = engine.AnySource
	// AnyTag matches a message with any tag.
	AnyTag = engine.AnyTag
)

// Undefined is the color that makes [Comm.Split] leave the calling rank out
// of every new communicator.
const Undefined = -32766

// Status describes a received or probed message.
//
// Count is the message's length in units of the element type the call
// named, as MPI_Get_count with that call's datatype:
//
//   - a receive of type t ([Comm.Recv], [Comm.Irecv], [Comm.Mrecv],
//     [Comm.Sendrecv], … and [Request.Wait] on one): elements of t, so a
//     receive of [Byte] counts bytes;
//   - every call of package typed's Comm[T], probes included: elements of T;
//   - calls that name no type, [Comm.Probe], [Comm.Iprobe], [Comm.Mprobe]
//     and [Comm.Improbe]: bytes (divide by [Type.Size] for elements);
//   - values ([Comm.RecvValue], [Comm.IrecvValue]): the bytes of the
//     value's encoding as it travelled, the same number a probe of that
//     message reports — not a number of values.
type Status struct {
	Source int // the sender's rank in the communicator
	Tag    int // the message's tag
	Count  int // the message's length: elements of the call's type, bytes for probes and values (see above)
}

func (s Status) String() string {
	return fmt.Sprintf("{source %d, tag %d, count %d}", s.Source, s.Tag, s.Count)
}

// Type is the element type a message carries: one of the numeric types
// below, [Value], or a struct type that [TypeOf] makes of a Go type. Typed
// messages are checked on receipt: a receive of another type fails with
// [ErrType], a receive of [Byte] gets the raw bytes of any message.
// Elements travel as their memory, in the sender's byte order.
type Type uint8

// The element types. Int, Uint and Uintptr are 8 bytes wide (mpgo supports
// 64-bit platforms only).
const (
	Byte Type = iota // uint8, and raw bytes of any type on receipt
	Int8
	Int16
	Int32
	Int64
	Int
	Uint16
	Uint32
	Uint64
	Uint
	Uintptr
	Float32
	Float64
	Complex64
	Complex128
	Value // a gob-encoded Go value
	numTypes
)

// The engine names and sizes the types by number (package engine's table
// follows the constants above).
var _ [engine.NumTypes - int(numTypes)]struct{} // the engine knows every type
var _ [int(numTypes) - engine.NumTypes]struct{}

func (t Type) String() string { return engine.Type(t).String() }

// Size is the width of one element in bytes (1 for Byte and Value).
func (t Type) Size() int { return engine.Type(t).Size() }

// holds reports whether n bytes are a whole number of elements of t. The
// built-in types' sizes are powers of two (TestTypeSizes), so for them it
// costs a mask, not a division: every send asks. A struct type's size
// may be any.
func (t Type) holds(n int) bool {
	if t < numTypes {
		return n&(t.Size()-1) == 0
	}
	return n%t.Size() == 0
}

// ident is t's identity between processes, the same in every process
// (a struct type's code is particular to its process): see
// engine.Type.Ident. identName names the type of an identity.
func (t Type) ident() int64 { return int64(engine.Type(t).Ident()) }

func identName(id int64) string { return engine.IdentString(uint64(id)) }

// Valid reports whether t is one of the defined types or a struct type of
// this process.
func (t Type) Valid() bool { return t < numTypes || engine.Type(t).IsStruct() }
