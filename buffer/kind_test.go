package buffer_test

import (
	"testing"

	"github.com/mpgo/mpgo/buffer"
)

type myInt int
type myComplex complex64

func TestKind(t *testing.T) {
	tests := []struct {
		got  buffer.Kind
		want buffer.Kind
		name string
		size int
	}{
		{buffer.KindOf[int8](), buffer.KindInt8, "int8", 1},
		{buffer.KindOf[int16](), buffer.KindInt16, "int16", 2},
		{buffer.KindOf[int32](), buffer.KindInt32, "int32", 4},
		{buffer.KindOf[int64](), buffer.KindInt64, "int64", 8},
		{buffer.KindOf[uint8](), buffer.KindUint8, "uint8", 1},
		{buffer.KindOf[byte](), buffer.KindUint8, "uint8", 1},
		{buffer.KindOf[uint16](), buffer.KindUint16, "uint16", 2},
		{buffer.KindOf[uint32](), buffer.KindUint32, "uint32", 4},
		{buffer.KindOf[uint64](), buffer.KindUint64, "uint64", 8},
		{buffer.KindOf[int](), buffer.KindInt, "int", 8},
		{buffer.KindOf[uint](), buffer.KindUint, "uint", 8},
		{buffer.KindOf[uintptr](), buffer.KindUintptr, "uintptr", 8},
		{buffer.KindOf[float32](), buffer.KindFloat32, "float32", 4},
		{buffer.KindOf[float64](), buffer.KindFloat64, "float64", 8},
		{buffer.KindOf[complex64](), buffer.KindComplex64, "complex64", 8},
		{buffer.KindOf[complex128](), buffer.KindComplex128, "complex128", 16},
		{buffer.KindOf[Celsius](), buffer.KindFloat64, "float64", 8},
		{buffer.KindOf[myInt](), buffer.KindInt, "int", 8},
		{buffer.KindOf[myComplex](), buffer.KindComplex64, "complex64", 8},
	}
	for _, tt := range tests {
		if tt.got != tt.want || tt.got.String() != tt.name || tt.got.Size() != tt.size || !tt.got.Valid() {
			t.Errorf("%v: want %v %q size %d, got size %d", tt.got, tt.want, tt.name, tt.size, tt.got.Size())
		}
	}
	for _, k := range []buffer.Kind{buffer.KindInvalid, 16, 200} {
		if k.Valid() || k.Size() != 0 {
			t.Errorf("Kind(%d) valid", k)
		}
	}
	if s := buffer.Kind(200).String(); s != "Kind(200)" {
		t.Errorf("String of an invalid kind: %q", s)
	}
}
