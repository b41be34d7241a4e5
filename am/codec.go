package am

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
)

// Payloads between processes.
//
// In one process a request or a reply is never encoded: the value itself
// is handed to the handler or the caller (message.go). Between processes
// it travels as bytes, chosen once per type at Register:
//
//   - a fixed-size value without pointers (numbers, and arrays and structs
//     of them): its memory, as package typed sends numbers;
//   - a slice of such values: its elements' memory;
//   - a string: its bytes;
//   - any other type: encoding/gob.
//
// The first three cost one copy and no encoder; like typed's, they assume
// that the processes share a byte order and a layout, as processes of one
// program on one kind of machine do.

// codecKind is how a type travels between processes.
type codecKind uint8

const (
	rawValue  codecKind = iota // a fixed-size value: its memory
	rawSlice                   // a slice of fixed-size elements: their memory
	rawString                  // a string: its bytes
	gobValue                   // encoding/gob
)

// codec encodes and decodes values of T.
type codec[T any] struct {
	kind codecKind
	size int          // rawValue: the value's size; rawSlice: an element's
	typ  reflect.Type // T
}

func newCodec[T any]() codec[T] {
	t := reflect.TypeFor[T]()
	switch {
	case fixedSize(t):
		return codec[T]{kind: rawValue, size: int(t.Size()), typ: t}
	case t.Kind() == reflect.Slice && fixedSize(t.Elem()) && t.Elem().Size() > 0:
		return codec[T]{kind: rawSlice, size: int(t.Elem().Size()), typ: t}
	case t.Kind() == reflect.String:
		return codec[T]{kind: rawString, typ: t}
	}
	return codec[T]{kind: gobValue, typ: t}
}

// fixedSize reports whether values of t are plain memory of a fixed size:
// numbers, and arrays and structs of them.
func fixedSize(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return fixedSize(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !fixedSize(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// raw returns the memory of the value v points to, for the raw kinds
// (nil when it is empty).
func (c *codec[T]) raw(v *T) []byte {
	switch c.kind {
	case rawValue:
		if c.size == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(v)), c.size)
	case rawSlice:
		s := *(*[]byte)(unsafe.Pointer(v)) // the slice's header; its length counts elements
		return unsafe.Slice(unsafe.SliceData(s), len(s)*c.size)
	case rawString:
		s := *(*string)(unsafe.Pointer(v))
		return unsafe.Slice(unsafe.StringData(s), len(s))
	}
	return nil
}

// encode returns head followed by v's encoding, in a new slice.
func (c *codec[T]) encode(head []byte, v *T) ([]byte, error) {
	if c.kind != gobValue {
		p := c.raw(v)
		buf := make([]byte, len(head)+len(p))
		copy(buf[copy(buf, head):], p)
		return buf, nil
	}
	b := bytes.NewBuffer(make([]byte, 0, len(head)+64))
	b.Write(head)
	if err := gob.NewEncoder(b).Encode(v); err != nil {
		return nil, fmt.Errorf("am: encoding a %v: %w", c.typ, err)
	}
	return b.Bytes(), nil
}

// decode decodes data, which it may keep, into v. An error wraps
// [comm.ErrType].
func (c *codec[T]) decode(data []byte, v *T) error {
	switch c.kind {
	case rawValue:
		if len(data) != c.size {
			return fmt.Errorf("am: %d bytes for a %v of %d: %w", len(data), c.typ, c.size, comm.ErrType)
		}
		copy(c.raw(v), data)
	case rawSlice:
		if len(data)%c.size != 0 {
			return fmt.Errorf("am: %d bytes for a %v of %d-byte elements: %w", len(data), c.typ, c.size, comm.ErrType)
		}
		n := len(data) / c.size
		if n == 0 {
			*v = *new(T)
			return nil
		}
		s := reflect.MakeSlice(c.typ, n, n) // typed memory, aligned for the elements
		copy(unsafe.Slice((*byte)(s.UnsafePointer()), len(data)), data)
		*(*[]byte)(unsafe.Pointer(v)) = unsafe.Slice((*byte)(s.UnsafePointer()), n)
	case rawString:
		*(*string)(unsafe.Pointer(v)) = string(data)
	default:
		if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
			return fmt.Errorf("am: decoding a %v: %v: %w", c.typ, err, comm.ErrType)
		}
	}
	return nil
}
