package buffer

import (
	"reflect"
	"strconv"
	"unsafe"

	"golang.org/x/exp/constraints"
)

// Number is the constraint of the element types a [Buffer] section or a
// [Buf] view holds: every Go integer, floating-point and complex type, named
// types over them included (type Celsius float64).
type Number interface {
	constraints.Integer | constraints.Float | constraints.Complex
}

// Kind is the element type code of a section, as it travels on the wire.
// The values are part of the wire format and never change.
//
// int, uint and uintptr are 8 bytes: this package supports 64-bit platforms
// only (a 32-bit build fails to compile).
type Kind uint8

// The element kinds.
const (
	KindInvalid Kind = iota
	KindInt8
	KindInt16
	KindInt32
	KindInt64
	KindUint8
	KindUint16
	KindUint32
	KindUint64
	KindInt
	KindUint
	KindUintptr
	KindFloat32
	KindFloat64
	KindComplex64
	KindComplex128
	kindCount
)

// The package assumes 8-byte int, uint and uintptr (see [Kind]): this
// fails to compile where they are smaller.
var _ [unsafe.Sizeof(int(0)) - 8]byte
var _ [unsafe.Sizeof(uintptr(0)) - 8]byte

var kindInfo = [kindCount]struct {
	name string
	size int
}{
	KindInvalid:    {"invalid", 0},
	KindInt8:       {"int8", 1},
	KindInt16:      {"int16", 2},
	KindInt32:      {"int32", 4},
	KindInt64:      {"int64", 8},
	KindUint8:      {"uint8", 1},
	KindUint16:     {"uint16", 2},
	KindUint32:     {"uint32", 4},
	KindUint64:     {"uint64", 8},
	KindInt:        {"int", 8},
	KindUint:       {"uint", 8},
	KindUintptr:    {"uintptr", 8},
	KindFloat32:    {"float32", 4},
	KindFloat64:    {"float64", 8},
	KindComplex64:  {"complex64", 8},
	KindComplex128: {"complex128", 16},
}

// reflectKinds maps reflect's kinds of the numeric types to Kinds.
var reflectKinds = [...]Kind{
	reflect.Int8:       KindInt8,
	reflect.Int16:      KindInt16,
	reflect.Int32:      KindInt32,
	reflect.Int64:      KindInt64,
	reflect.Uint8:      KindUint8,
	reflect.Uint16:     KindUint16,
	reflect.Uint32:     KindUint32,
	reflect.Uint64:     KindUint64,
	reflect.Int:        KindInt,
	reflect.Uint:       KindUint,
	reflect.Uintptr:    KindUintptr,
	reflect.Float32:    KindFloat32,
	reflect.Float64:    KindFloat64,
	reflect.Complex64:  KindComplex64,
	reflect.Complex128: KindComplex128,
}

// KindOf returns the Kind of T, by its underlying type: KindOf[Celsius]() is
// KindFloat64 for type Celsius float64. Each generic operation calls it once,
// never per element.
func KindOf[T Number]() Kind {
	return reflectKinds[reflect.TypeFor[T]().Kind()]
}

// Valid reports whether k is one of the element kinds.
func (k Kind) Valid() bool { return k > KindInvalid && k < kindCount }

// Size returns the size in bytes of one element of kind k, 0 if k is not
// valid.
func (k Kind) Size() int {
	if !k.Valid() {
		return 0
	}
	return kindInfo[k].size
}

// String returns the Go name of k's type ("float64"), or "Kind(n)" if k is
// not valid.
func (k Kind) String() string {
	if !k.Valid() {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindInfo[k].name
}

// unit returns the size of the scalars that byte-order conversion reverses
// in an element of kind k: the element itself, or each half of a complex.
func (k Kind) unit() int {
	switch k {
	case KindComplex64, KindComplex128:
		return kindInfo[k].size / 2
	}
	return kindInfo[k].size
}
