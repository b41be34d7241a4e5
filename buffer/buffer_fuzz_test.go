package buffer_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo/buffer"
)

// kindOps writes and reads sections of one element type, moving elements as
// their bytes in the machine's order, so that fuzz tests can drive every
// type from a byte string.
type kindOps struct {
	size  int
	write func(b *buffer.Buffer, raw []byte, how int) error
	read  func(b *buffer.Buffer, count, how int) ([]byte, error)
}

func memOf[T buffer.Number](s []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

func opsFor[T buffer.Number]() kindOps {
	var z T
	size := int(unsafe.Sizeof(z))
	identity := func(n int) []int {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	// region describes n elements as a strided region: in two rows when n
	// is even (merged back into one run), else one row.
	region := func(n int) ([]int, []int) {
		if n > 0 && n%2 == 0 {
			return []int{2, n / 2}, []int{n / 2, 1}
		}
		return []int{n}, []int{1}
	}
	return kindOps{
		size: size,
		write: func(b *buffer.Buffer, raw []byte, how int) error {
			src := make([]T, len(raw)/size)
			copy(memOf(src), raw)
			switch how % 3 {
			case 0:
				return buffer.Write(b, src)
			case 1:
				return buffer.Gather(b, src, identity(len(src)))
			}
			shape, strides := region(len(src))
			return buffer.GatherStrided(b, src, 0, shape, strides)
		},
		read: func(b *buffer.Buffer, count, how int) ([]byte, error) {
			dst := make([]T, count)
			var err error
			switch how % 3 {
			case 0:
				err = buffer.Read(b, dst)
			case 1:
				err = buffer.Scatter(b, dst, identity(count))
			default:
				shape, strides := region(count)
				err = buffer.ScatterStrided(b, dst, 0, shape, strides)
			}
			return memOf(dst), err
		},
	}
}

var allOps = map[buffer.Kind]kindOps{
	buffer.KindInt8:       opsFor[int8](),
	buffer.KindInt16:      opsFor[int16](),
	buffer.KindInt32:      opsFor[int32](),
	buffer.KindInt64:      opsFor[int64](),
	buffer.KindUint8:      opsFor[uint8](),
	buffer.KindUint16:     opsFor[uint16](),
	buffer.KindUint32:     opsFor[uint32](),
	buffer.KindUint64:     opsFor[uint64](),
	buffer.KindInt:        opsFor[int](),
	buffer.KindUint:       opsFor[uint](),
	buffer.KindUintptr:    opsFor[uintptr](),
	buffer.KindFloat32:    opsFor[float32](),
	buffer.KindFloat64:    opsFor[float64](),
	buffer.KindComplex64:  opsFor[complex64](),
	buffer.KindComplex128: opsFor[complex128](),
}

// seedWires are well-formed wires to start fuzzing readers from.
func seedWires(f *testing.F) {
	for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		w, _ := buffer.NewWriter(buffer.WithOrder(o))
		buffer.Write(w, []int32{1, -2, 3})
		buffer.Write(w, []complex128{1 + 2i})
		buffer.Write(w, []uint8{})
		w.WriteValue(point{1, 2, "p", map[string]int{"a": 1}})
		w.WriteValue("hello")
		buffer.Write(w, []float32{1.5, 2.5, 3.5})
		wire, _ := w.Commit()
		f.Add(slices.Clone(wire))
	}
	f.Add([]byte("mpgb\x01L\x00\x00"))
	f.Add(make([]byte, 24))
}

// FuzzReader feeds arbitrary bytes to NewReader and reads whatever sections
// and values they claim to hold: every call returns data or an error, and
// never panics or reads outside the bytes.
func FuzzReader(f *testing.F) {
	seedWires(f)
	f.Fuzz(func(t *testing.T, wire []byte) {
		// Read from a copy with no spare capacity, so that the race
		// detector and bounds checks catch any read past its end.
		wire = slices.Clip(slices.Clone(wire))
		r, err := buffer.NewReader(wire)
		if err != nil {
			if !errors.Is(err, buffer.ErrCorrupt) {
				t.Fatalf("NewReader: %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for i := 0; i < 64; i++ {
			k, count, err := r.Next()
			if err != nil {
				if !errors.Is(err, buffer.ErrEnd) && !errors.Is(err, buffer.ErrCorrupt) {
					t.Fatalf("Next: %v", err)
				}
				break
			}
			if count > len(wire) {
				t.Fatalf("section of %d elements in %d bytes", count, len(wire))
			}
			ops := allOps[k]
			// A mismatched read fails and leaves the section in place.
			if _, err := ops.read(r, count+1, i); !errors.Is(err, buffer.ErrSectionCount) {
				t.Fatalf("read of the wrong count: %v", err)
			}
			if _, err := ops.read(r, count, i); err != nil {
				t.Fatalf("read of section %d (%v × %d): %v", i, k, count, err)
			}
		}
		targets := []func() any{
			func() any { return new(point) },
			func() any { return new(string) },
			func() any { return new([]int) },
			func() any { return new(map[string]float64) },
			func() any { return new(int) },
		}
		for i := 0; i < 16; i++ {
			if err := r.ReadValue(targets[i%len(targets)]()); err != nil {
				if !errors.Is(err, buffer.ErrEnd) && !errors.Is(err, buffer.ErrValue) {
					t.Fatalf("ReadValue: %v", err)
				}
				if errors.Is(err, buffer.ErrEnd) {
					break
				}
			}
		}
	})
}

// FuzzRoundTrip writes sections built from the fuzz bytes, of every type, in
// either byte order and by every write path, and checks that they read back
// unchanged by every read path.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}, false)
	f.Add([]byte{14, 2, 255, 254, 253, 252, 251, 250, 249, 248, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, true)
	f.Add([]byte{44, 0, 7, 5, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}, true)
	f.Fuzz(func(t *testing.T, data []byte, big bool) {
		var order binary.ByteOrder = binary.LittleEndian
		if big {
			order = binary.BigEndian
		}
		w, err := buffer.NewWriter(buffer.WithOrder(order))
		if err != nil {
			t.Fatal(err)
		}
		type section struct {
			k   buffer.Kind
			raw []byte
			how int
		}
		var want []section
		for len(data) >= 2 {
			k := buffer.Kind(data[0]%15 + 1)
			how := int(data[0] / 15)
			ops := allOps[k]
			n := int(data[1]) % 40
			data = data[2:]
			raw := data[:min(n*ops.size, len(data)/ops.size*ops.size)]
			data = data[len(raw):]
			if err := ops.write(w, raw, how); err != nil {
				t.Fatalf("write %v × %d: %v", k, len(raw)/ops.size, err)
			}
			want = append(want, section{k, raw, how / 3})
		}
		wire, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		r, err := buffer.NewReader(slices.Clone(wire))
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range want {
			ops := allOps[s.k]
			got, err := ops.read(r, len(s.raw)/ops.size, s.how)
			if err != nil {
				t.Fatalf("section %d: %v", i, err)
			}
			if !bytes.Equal(got, s.raw) {
				t.Fatalf("section %d (%v): read % x, wrote % x", i, s.k, got, s.raw)
			}
		}
		if _, _, err := r.Next(); !errors.Is(err, buffer.ErrEnd) {
			t.Fatalf("after the last section: %v", err)
		}
	})
}
