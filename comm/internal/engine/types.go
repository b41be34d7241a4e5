package engine

import (
	"errors"
	"fmt"

	"github.com/mpgo/mpgo/comm/device"
)

// The engine's vocabulary, which package comm re-exports to users: the
// wildcards, a message's status and element type, the payload interfaces
// and the sentinel errors. comm defines its own documented Status and Type
// over the same representation and converts at no cost; the interfaces
// and sentinels are the same values there.

// Wildcards of receives and probes.
const (
	AnySource = -1
	AnyTag    = -1
)

// Status describes a received or probed message; comm.Status has the same
// fields.
type Status struct {
	Source int
	Tag    int
	Count  int // bytes, or elements of the request's type once completed
}

// Type is a message's element type, numbered as comm's Type constants
// number them (Byte is 0), or a struct type registered in this process
// (structs.go); the engine reads only its size and name.
type Type uint8

// Byte is the type of raw bytes, which a receive of any type accepts.
const Byte Type = 0

// NumTypes is the number of built-in types.
const NumTypes = 16

var typeNames = [NumTypes]string{"byte", "int8", "int16", "int32", "int64", "int",
	"uint16", "uint32", "uint64", "uint", "uintptr", "float32", "float64",
	"complex64", "complex128", "value"}

var typeSizes = [NumTypes]int{1, 1, 2, 4, 8, 8, 2, 4, 8, 8, 8, 4, 8, 8, 16, 1}

func (t Type) String() string {
	if t < NumTypes {
		return typeNames[t]
	}
	if s := structOf(t); s != nil {
		return s.String()
	}
	if t == unknownStruct {
		return "a struct type of a layout unknown here"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Size is the width of one element in bytes (1 for Byte, Value and any
// undefined type).
func (t Type) Size() int {
	if t < NumTypes {
		return typeSizes[t]
	}
	if s := structOf(t); s != nil {
		return s.size
	}
	return 1
}

// Sentinel errors of the engine; comm exports the same values.
var (
	ErrTruncate = errors.New("comm: message truncated")
	ErrType     = errors.New("comm: element type mismatch")
	ErrDeadlock = errors.New("comm: deadlock")
	ErrCanceled = errors.New("comm: request canceled")

	ErrRank         = device.ErrRank
	ErrArg          = device.ErrArg
	ErrAborted      = device.ErrAborted
	ErrClosed       = device.ErrClosed
	ErrNotSupported = device.ErrNotSupported
	ErrPeerLost     = device.ErrPeerLost
)
