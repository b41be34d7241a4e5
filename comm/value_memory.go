package comm

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// Values of fixed-size types travel as their memory.
//
// encoding/gob costs a small value tens of microseconds: every message is a
// fresh gob stream, so the encoder sends the type's description each time
// and the decoder compiles its decoding of it each time. A value whose
// type is fixed-size and made only of exported fields of numbers, bools,
// arrays and structs (no pointers, strings, slices, maps or interfaces;
// nothing that marshals itself) travels instead as a memory message: a
// description of its type (field names, kinds, offsets) and the value's
// bytes. A receive into a type of the same description copies the bytes;
// a receive into any other type rebuilds the sender's type from the
// description and converts through gob, so that every conversion gob
// allows (an int into an int64, a struct into one with fewer fields) is
// still allowed. Memory messages are told from gob's by their first four
// bytes (memoryMagic; gob's are buffer's wire magic).

// memoryMagic starts a memory message: memoryMagic, the description's
// length (uint16, little-endian), the description, the value's bytes.
var memoryMagic = [4]byte{'m', 'p', 'g', 'm'}

const memoryHeader = len(memoryMagic) + 2

// memoryType is how a Go type travels as memory; desc is nil for a type
// that travels by gob.
type memoryType struct {
	desc []byte
	size int
}

// memoryTypes caches memoryTypeOf.
var memoryTypes sync.Map // reflect.Type → memoryType

// memoryTypeOf returns how values of t travel; its desc is nil when they
// go by gob.
func memoryTypeOf(t reflect.Type) memoryType {
	if m, ok := memoryTypes.Load(t); ok {
		return m.(memoryType)
	}
	var m memoryType
	if desc, ok := appendDesc(nil, t); ok && t.Size() > 0 && len(desc) <= 0xffff {
		m = memoryType{desc: desc, size: int(t.Size())}
	}
	memoryTypes.Store(t, m)
	return m
}

// The tags of a description besides the basic kinds' numbers (all below
// 0x80).
const (
	descArray byte = 0x80 + iota
	descStruct
)

var (
	gobEncoderType       = reflect.TypeFor[gob.GobEncoder]()
	binaryMarshalerType  = reflect.TypeFor[encoding.BinaryMarshaler]()
	textMarshalerType    = reflect.TypeFor[encoding.TextMarshaler]()
	gobDecoderType       = reflect.TypeFor[gob.GobDecoder]()
	binaryUnmarshalerTyp = reflect.TypeFor[encoding.BinaryUnmarshaler]()
	textUnmarshalerType  = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// marshalsItself reports whether gob would encode or decode t through its
// own methods rather than field by field.
func marshalsItself(t reflect.Type) bool {
	for _, i := range []reflect.Type{gobEncoderType, binaryMarshalerType, textMarshalerType,
		gobDecoderType, binaryUnmarshalerTyp, textUnmarshalerType} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return true
		}
	}
	return false
}

// appendDesc appends t's description to b: for a number or bool its kind,
// for an array its tag, length and element's description, for a struct its
// tag, field count, and each field's name, offset and description. It
// reports false for a type that must travel by gob.
func appendDesc(b []byte, t reflect.Type) ([]byte, bool) {
	if marshalsItself(t) {
		return nil, false
	}
	if _, ok := basicKinds[t.Kind()]; ok {
		return append(b, byte(t.Kind())), true
	}
	switch t.Kind() {
	case reflect.Array:
		if t.Len() == 0 {
			return nil, false
		}
		b = append(b, descArray)
		b = binary.AppendUvarint(b, uint64(t.Len()))
		return appendDesc(b, t.Elem())
	case reflect.Struct:
		if t.NumField() == 0 {
			return nil, false // gob refuses a struct without exported fields
		}
		b = append(b, descStruct)
		b = binary.AppendUvarint(b, uint64(t.NumField()))
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				return nil, false // gob leaves unexported fields alone
			}
			b = binary.AppendUvarint(b, uint64(len(f.Name)))
			b = append(b, f.Name...)
			b = binary.AppendUvarint(b, uint64(f.Offset))
			var ok bool
			if b, ok = appendDesc(b, f.Type); !ok {
				return nil, false
			}
		}
		return b, true
	}
	return nil, false
}

// basicKinds are the kinds that travel as memory, with their types.
var basicKinds = map[reflect.Kind]reflect.Type{
	reflect.Bool:       reflect.TypeFor[bool](),
	reflect.Int:        reflect.TypeFor[int](),
	reflect.Int8:       reflect.TypeFor[int8](),
	reflect.Int16:      reflect.TypeFor[int16](),
	reflect.Int32:      reflect.TypeFor[int32](),
	reflect.Int64:      reflect.TypeFor[int64](),
	reflect.Uint:       reflect.TypeFor[uint](),
	reflect.Uint8:      reflect.TypeFor[uint8](),
	reflect.Uint16:     reflect.TypeFor[uint16](),
	reflect.Uint32:     reflect.TypeFor[uint32](),
	reflect.Uint64:     reflect.TypeFor[uint64](),
	reflect.Float32:    reflect.TypeFor[float32](),
	reflect.Float64:    reflect.TypeFor[float64](),
	reflect.Complex64:  reflect.TypeFor[complex64](),
	reflect.Complex128: reflect.TypeFor[complex128](),
}

// encodeMemory returns v as a memory message, or ok false when v's type
// travels by gob. A pointer (non-nil) travels as what it points to, as gob
// sends it.
func encodeMemory(v any) (data []byte, ok bool) {
	rv := reflect.ValueOf(v)
	var p unsafe.Pointer
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, false
		}
		p, rv = rv.UnsafePointer(), rv.Elem()
	}
	m := memoryTypeOf(rv.Type())
	if m.desc == nil {
		return nil, false
	}
	if p == nil {
		// An interface holding a value that is not a pointer holds a
		// pointer to a copy of it: read the value there.
		p = (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
	}
	data = make([]byte, memoryHeader+len(m.desc)+m.size)
	copy(data, memoryMagic[:])
	binary.LittleEndian.PutUint16(data[len(memoryMagic):], uint16(len(m.desc)))
	copy(data[memoryHeader:], m.desc)
	copy(data[memoryHeader+len(m.desc):], unsafe.Slice((*byte)(p), m.size))
	return data, true
}

// isMemory reports whether data is a memory message.
func isMemory(data []byte) bool {
	return len(data) >= memoryHeader && [4]byte(data[:4]) == memoryMagic
}

// decodeMemory decodes the memory message data into *ptr (ptr a non-nil
// pointer), allocating through nil pointers as gob does.
func decodeMemory(data []byte, ptr any) error {
	n := int(binary.LittleEndian.Uint16(data[len(memoryMagic):]))
	if len(data) < memoryHeader+n {
		return fmt.Errorf("a memory message of %d bytes with a description of %d", len(data), n)
	}
	desc, mem := data[memoryHeader:memoryHeader+n], data[memoryHeader+n:]
	rv := reflect.ValueOf(ptr).Elem()
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			if m := memoryTypeOf(deref(rv.Type())); !bytes.Equal(m.desc, desc) {
				break // gob conversion below; it allocates as it needs
			}
			rv.Set(reflect.New(rv.Type().Elem()))
		}
		rv = rv.Elem()
	}
	if m := memoryTypeOf(rv.Type()); m.desc != nil && bytes.Equal(m.desc, desc) && len(mem) == m.size {
		copy(unsafe.Slice((*byte)(rv.Addr().UnsafePointer()), m.size), mem)
		return nil
	}
	return convertMemory(desc, mem, ptr)
}

// deref is t without its pointers.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// convertMemory decodes a value of another type than *ptr's: it rebuilds
// the sender's type from desc, and converts the value through gob as if
// it had travelled by gob.
func convertMemory(desc, mem []byte, ptr any) error {
	t, rest, err := typeOfDesc(desc)
	if err != nil {
		return err
	}
	if len(rest) != 0 || int(t.Size()) != len(mem) {
		return fmt.Errorf("a memory message of %d bytes for a %d-byte %v", len(mem), t.Size(), t)
	}
	v := reflect.New(t)
	copy(unsafe.Slice((*byte)(v.UnsafePointer()), len(mem)), mem)
	var stream bytes.Buffer
	if err := gob.NewEncoder(&stream).EncodeValue(v); err != nil {
		return err
	}
	return gob.NewDecoder(&stream).Decode(ptr)
}

// typeOfDesc builds a type of the description at the start of desc, with
// the same memory layout, and returns the rest of desc.
func typeOfDesc(desc []byte) (t reflect.Type, rest []byte, err error) {
	// reflect panics on a type it cannot make (an array too large, a field
	// name that is no identifier): that is a malformed description.
	if perr := catch(func() { t, rest, err = buildType(desc) }); perr != nil {
		return nil, nil, fmt.Errorf("a malformed type description: %v", perr)
	}
	return t, rest, err
}

// buildType is typeOfDesc, panicking where reflect does.
func buildType(desc []byte) (reflect.Type, []byte, error) {
	bad := fmt.Errorf("a malformed type description % x", desc)
	if len(desc) == 0 {
		return nil, nil, bad
	}
	tag, desc := desc[0], desc[1:]
	if t, ok := basicKinds[reflect.Kind(tag)]; ok {
		return t, desc, nil
	}
	uvarint := func() (int, bool) {
		x, k := binary.Uvarint(desc)
		if k <= 0 || x > 1<<31 {
			return 0, false
		}
		desc = desc[k:]
		return int(x), true
	}
	switch tag {
	case descArray:
		n, ok := uvarint()
		if !ok {
			return nil, nil, bad
		}
		elem, rest, err := buildType(desc)
		if err != nil {
			return nil, nil, err
		}
		return reflect.ArrayOf(n, elem), rest, nil
	case descStruct:
		nf, ok := uvarint()
		if !ok || nf > len(desc) {
			return nil, nil, bad
		}
		fields := make([]reflect.StructField, nf)
		offsets := make([]int, nf)
		for i := range fields {
			k, ok := uvarint()
			if !ok || k > len(desc) {
				return nil, nil, bad
			}
			name := string(desc[:k])
			desc = desc[k:]
			if offsets[i], ok = uvarint(); !ok {
				return nil, nil, bad
			}
			ft, rest, err := buildType(desc)
			if err != nil {
				return nil, nil, err
			}
			desc = rest
			fields[i] = reflect.StructField{Name: name, Type: ft}
		}
		t := reflect.StructOf(fields)
		for i := range fields {
			if int(t.Field(i).Offset) != offsets[i] {
				return nil, nil, fmt.Errorf("field %s at offset %d here, %d where it was sent", fields[i].Name, t.Field(i).Offset, offsets[i])
			}
		}
		return t, desc, nil
	}
	return nil, nil, bad
}

// catch runs f and returns its panic as an error.
func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}
