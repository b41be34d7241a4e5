package comm

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// TypeOf returns the element Type of Go type t: the numeric Type of an
// integer, float or complex kind (named types over them included: a
// Celsius float64 is a [Float64]), and a struct Type for any other
// fixed-size type without pointers — a bool, an array, a struct, made of
// numbers, bools and such arrays and structs (padding and blank fields
// included).
//
// A struct Type stands for its layout, not for its name: the memory
// layout of t (its size and alignment, each field's offset and kind,
// recursively; no names) is what a message of it carries, as a 32-bit
// fingerprint, and what a receive checks. So two Go types of one layout
// are interchangeable, as MPI's derived types of one type map are, and the
// same type in two processes of one program matches; a receive of any
// other type fails with [ErrType] (receiving as [Byte] gets the raw
// bytes, as for numbers). Elements travel as their memory, padding
// included, in the sender's byte order: the processes of a job must share
// one architecture (64-bit, as for numbers). A struct Type's value is
// particular to the process that made it; only its layout travels.
//
// Any other type — one with pointers, strings, slices, maps, interfaces,
// channels or funcs anywhere in it, or of size zero — fails with an error
// wrapping [ErrType] that names it and what rules it out; so does a
// layout beyond the 238 distinct ones a process can use, or one whose
// fingerprint another layout the process uses has already (a chance of
// about 1 in 2³² for a pair of layouts). The result is computed once per
// type; TypeOf is safe for concurrent use.
func TypeOf(t reflect.Type) (Type, error) {
	if t == nil {
		return 0, fmt.Errorf("comm: TypeOf(nil): %w", ErrArg)
	}
	if n, ok := numberType(t.Kind()); ok {
		return n, nil
	}
	if v, ok := structTypes.Load(t); ok {
		r := v.(typeOfResult)
		return r.t, r.err
	}
	var r typeOfResult
	r.t, r.err = structTypeOf(t)
	structTypes.Store(t, r)
	return r.t, r.err
}

// structTypes caches TypeOf's result for types other than numbers.
var structTypes sync.Map // reflect.Type → typeOfResult

type typeOfResult struct {
	t   Type
	err error
}

// structTypeOf checks t and registers its shape with the engine.
func structTypeOf(t reflect.Type) (Type, error) {
	shape, err := appendShape(nil, t, "")
	if err != nil {
		return 0, fmt.Errorf("comm: %v cannot be an element type: %w", t, err)
	}
	if t.Size() == 0 {
		return 0, fmt.Errorf("comm: %v cannot be an element type: it has no size: %w", t, ErrType)
	}
	et, err := engine.RegisterStruct(string(shape), int(t.Size()), t.String())
	return Type(et), err
}

// The tags of a shape (appendShape) besides the numeric Types' codes.
const (
	shapeBool byte = 0x80 + iota
	shapeArray
	shapeStruct
)

// appendShape appends to b the canonical encoding of t's memory layout:
// for a number its Type's code, for a bool a tag, for an array its tag,
// length and element's shape, for a struct its tag, size, alignment,
// field count, and each field's offset and shape. where names t in its
// enclosing type, for the error on a type that cannot travel as memory.
func appendShape(b []byte, t reflect.Type, where string) ([]byte, error) {
	if n, ok := numberType(t.Kind()); ok {
		return append(b, byte(n)), nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return append(b, shapeBool), nil
	case reflect.Array:
		b = append(b, shapeArray)
		b = binary.AppendUvarint(b, uint64(t.Len()))
		return appendShape(b, t.Elem(), where+"[0]")
	case reflect.Struct:
		b = append(b, shapeStruct)
		b = binary.AppendUvarint(b, uint64(t.Size()))
		b = binary.AppendUvarint(b, uint64(t.Align()))
		b = binary.AppendUvarint(b, uint64(t.NumField()))
		for i := range t.NumField() {
			f := t.Field(i)
			b = binary.AppendUvarint(b, uint64(f.Offset))
			var err error
			if b, err = appendShape(b, f.Type, where+"."+f.Name); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	what := "a " + t.Kind().String()
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer:
		what = "a pointer"
	case reflect.Interface:
		what = "an interface"
	case reflect.Chan:
		what = "a channel"
	}
	if where == "" {
		return nil, fmt.Errorf("it is %s: %w", what, ErrType)
	}
	return nil, fmt.Errorf("%s (%v) is %s: %w", strings.TrimPrefix(where, "."), t, what, ErrType)
}

// numberType returns the Type of a numeric kind.
func numberType(k reflect.Kind) (Type, bool) {
	switch k {
	case reflect.Uint8:
		return Byte, true
	case reflect.Int8:
		return Int8, true
	case reflect.Int16:
		return Int16, true
	case reflect.Int32:
		return Int32, true
	case reflect.Int64:
		return Int64, true
	case reflect.Int:
		return Int, true
	case reflect.Uint16:
		return Uint16, true
	case reflect.Uint32:
		return Uint32, true
	case reflect.Uint64:
		return Uint64, true
	case reflect.Uint:
		return Uint, true
	case reflect.Uintptr:
		return Uintptr, true
	case reflect.Float32:
		return Float32, true
	case reflect.Float64:
		return Float64, true
	case reflect.Complex64:
		return Complex64, true
	case reflect.Complex128:
		return Complex128, true
	}
	return 0, false
}
