package buffer

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// nativeBig reports whether this machine stores numbers big-endian.
var nativeBig = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// isBig reports whether o writes numbers big-endian.
func isBig(o binary.ByteOrder) bool { return o.Uint16([]byte{0, 1}) == 1 }

// orderOf returns the byte order named by big.
func orderOf(big bool) binary.ByteOrder {
	if big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// asBytes returns the memory of s as bytes, without copying: the
// reinterpretation that makes native-order packing a memmove.
func asBytes[T Number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// asElems returns the memory of p as elements of T, without copying. p
// must be aligned for T (see aligned) and its length a multiple of T's size.
func asElems[T Number](p []byte) []T {
	if len(p) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(p))), len(p)/int(unsafe.Sizeof(z)))
}

// aligned reports whether p may be viewed as elements of T.
func aligned[T Number](p []byte) bool {
	var z T
	return len(p) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(p)))%unsafe.Alignof(z) == 0
}

// swapUnits reverses the bytes of each unit-byte scalar in b: the per-element
// work of a byte order other than the machine's. len(b) must be a multiple
// of unit. Aligned memory (the usual case: pool blocks, Go slices of the
// element type) is swapped a word at a time.
func swapUnits(b []byte, unit int) {
	if len(b) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%uintptr(unit) == 0 {
		switch unit {
		case 2:
			s := unsafe.Slice((*uint16)(p), len(b)/2)
			for i, v := range s {
				s[i] = bits.ReverseBytes16(v)
			}
			return
		case 4:
			s := unsafe.Slice((*uint32)(p), len(b)/4)
			for i, v := range s {
				s[i] = bits.ReverseBytes32(v)
			}
			return
		case 8:
			s := unsafe.Slice((*uint64)(p), len(b)/8)
			for i, v := range s {
				s[i] = bits.ReverseBytes64(v)
			}
			return
		}
	}
	switch unit {
	case 2:
		for i := 0; i+2 <= len(b); i += 2 {
			b[i], b[i+1] = b[i+1], b[i]
		}
	case 4:
		for i := 0; i+4 <= len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], bits.ReverseBytes32(binary.LittleEndian.Uint32(b[i:])))
		}
	case 8:
		for i := 0; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], bits.ReverseBytes64(binary.LittleEndian.Uint64(b[i:])))
		}
	}
}
