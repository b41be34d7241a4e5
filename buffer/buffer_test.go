package buffer_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mpgo/mpgo/buffer"
)

type Celsius float64

// orders are the byte orders every round trip runs in.
var orders = []struct {
	name  string
	order binary.ByteOrder
}{
	{"little", binary.LittleEndian},
	{"big", binary.BigEndian},
	{"native", binary.NativeEndian},
}

// sample returns n values of T covering zero, extremes and every byte.
func sample[T buffer.Number](n int) []T {
	s := make([]T, n)
	for i := range s {
		var v T
		switch p := any(&v).(type) {
		case *float32:
			*p = float32(i)*1.5 - 3.25
		case *float64:
			*p = float64(i)*1.25e10 - math.Pi
		case *complex64:
			*p = complex(float32(i)+0.5, -float32(i)*2)
		case *complex128:
			*p = complex(float64(i)*1e-3, math.E*float64(i))
		case *Celsius:
			*p = Celsius(i) - 273.15
		default:
			// Integers: spread bits over the whole width.
			x := uint64(i)*0x9E3779B97F4A7C15 + 1
			v = fromBits[T](x)
		}
		s[i] = v
	}
	return s
}

func fromBits[T buffer.Number](x uint64) T {
	var v T
	rv := reflect.ValueOf(&v).Elem()
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		rv.SetInt(int64(x) >> (64 - rv.Type().Bits()))
	default:
		rv.SetUint(x >> (64 - rv.Type().Bits()))
	}
	return v
}

// wireOf encodes s as the payload of a section in order o, independently of
// the package (encoding/binary, element by element).
func wireOf[T buffer.Number](s []T, o binary.ByteOrder) []byte {
	var out []byte
	for _, v := range s {
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Int:
			out = o.(binary.AppendByteOrder).AppendUint64(out, uint64(rv.Int()))
		case reflect.Uint, reflect.Uintptr:
			out = o.(binary.AppendByteOrder).AppendUint64(out, rv.Uint())
		default:
			var err error
			if out, err = binary.Append(out, o, v); err != nil {
				panic(err)
			}
		}
	}
	return out
}

func testRoundTrip[T buffer.Number](t *testing.T) {
	k := buffer.KindOf[T]()
	p := newPool(t, buffer.WithRegionSize(1<<20))
	for _, o := range orders {
		for _, pooled := range []bool{false, true} {
			for _, n := range []int{0, 1, 3, 1000} {
				name := fmt.Sprintf("%s/pool=%v/n=%d", o.name, pooled, n)
				opts := []buffer.BufferOption{buffer.WithOrder(o.order)}
				if pooled {
					opts = append(opts, buffer.WithPool(p))
				}
				w, err := buffer.NewWriter(opts...)
				if err != nil {
					t.Fatal(err)
				}
				src := sample[T](n)
				if err := buffer.Write(w, src); err != nil {
					t.Fatalf("%s: Write: %v", name, err)
				}
				if err := buffer.Write(w, []int8{-1, 2, -3}); err != nil {
					t.Fatalf("%s: Write: %v", name, err)
				}
				if got, want := w.Len(), buffer.HeaderSize+buffer.SectionSize[T](n)+buffer.SectionSize[int8](3); got != want {
					t.Fatalf("%s: Len %d, want %d", name, got, want)
				}
				wire, err := w.Commit()
				if err != nil {
					t.Fatal(err)
				}
				// The bytes on the wire are the ones encoding/binary writes.
				word := o.order.Uint64(wire[buffer.HeaderSize:])
				if Kind := buffer.Kind(word >> 56); Kind != k || int(word&buffer.MaxCount) != n {
					t.Fatalf("%s: section header %#x, want %v × %d", name, word, k, n)
				}
				payload := wire[buffer.HeaderSize+buffer.SectionHeaderSize:]
				want := wireOf(src, o.order)
				if !bytes.Equal(payload[:len(want)], want) {
					t.Fatalf("%s: payload % x, want % x", name, payload[:min(len(want), 32)], want[:min(len(want), 32)])
				}
				pad := buffer.SectionSize[T](n) - buffer.SectionHeaderSize - len(want)
				if !bytes.Equal(payload[len(want):len(want)+pad], make([]byte, pad)) {
					t.Fatalf("%s: padding not zero", name)
				}
				// Read back: from the committed writer, from a copy, and
				// from a copy at an odd address.
				odd := make([]byte, len(wire)+1)[1:]
				copy(odd, wire)
				readers := []func() (*buffer.Buffer, error){
					func() (*buffer.Buffer, error) { return w, nil },
					func() (*buffer.Buffer, error) { return buffer.NewReader(slices.Clone(wire)) },
					func() (*buffer.Buffer, error) { return buffer.NewReader(odd) },
				}
				for i, open := range readers {
					r, err := open()
					if err != nil {
						t.Fatalf("%s: reader %d: %v", name, i, err)
					}
					if kk, c, err := r.Next(); err != nil || kk != k || c != n {
						t.Fatalf("%s: Next = %v, %d, %v", name, kk, c, err)
					}
					dst := make([]T, n)
					if err := buffer.Read(r, dst); err != nil {
						t.Fatalf("%s: reader %d: Read: %v", name, i, err)
					}
					if !slices.Equal(dst, src) {
						t.Fatalf("%s: reader %d: read %v, want %v", name, i, dst[:min(n, 4)], src[:min(n, 4)])
					}
					// The same section again, through Scatter (the
					// staged path when unaligned or swapped).
					if i > 0 {
						r2, _ := buffer.NewReader(odd)
						idx := make([]int, n)
						for j := range idx {
							idx[j] = n - 1 - j
						}
						rev := make([]T, n)
						if err := buffer.Scatter(r2, rev, idx); err != nil {
							t.Fatal(err)
						}
						slices.Reverse(rev)
						if !slices.Equal(rev, src) {
							t.Fatalf("%s: scatter read %v, want %v", name, rev[:min(n, 4)], src[:min(n, 4)])
						}
					}
					tail := make([]int8, 3)
					if err := buffer.Read(r, tail); err != nil || !slices.Equal(tail, []int8{-1, 2, -3}) {
						t.Fatalf("%s: second section %v, %v", name, tail, err)
					}
					if _, _, err := r.Next(); !errors.Is(err, buffer.ErrEnd) {
						t.Fatalf("%s: Next past the end: %v", name, err)
					}
				}
				if err := w.Free(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if s := p.Stats(); s.InUse != 0 {
		t.Fatalf("pool still has %d bytes in use", s.InUse)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Run("int8", testRoundTrip[int8])
	t.Run("int16", testRoundTrip[int16])
	t.Run("int32", testRoundTrip[int32])
	t.Run("int64", testRoundTrip[int64])
	t.Run("uint8", testRoundTrip[uint8])
	t.Run("uint16", testRoundTrip[uint16])
	t.Run("uint32", testRoundTrip[uint32])
	t.Run("uint64", testRoundTrip[uint64])
	t.Run("int", testRoundTrip[int])
	t.Run("uint", testRoundTrip[uint])
	t.Run("uintptr", testRoundTrip[uintptr])
	t.Run("float32", testRoundTrip[float32])
	t.Run("float64", testRoundTrip[float64])
	t.Run("complex64", testRoundTrip[complex64])
	t.Run("complex128", testRoundTrip[complex128])
	t.Run("Celsius", testRoundTrip[Celsius])
}

func TestModes(t *testing.T) {
	w, err := buffer.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	ints := []int32{1, 2}
	tests := []struct {
		name string
		op   func(b *buffer.Buffer) error
	}{
		{"Read", func(b *buffer.Buffer) error { return buffer.Read(b, ints) }},
		{"Scatter", func(b *buffer.Buffer) error { return buffer.Scatter(b, ints, []int{0}) }},
		{"ScatterStrided", func(b *buffer.Buffer) error { return buffer.ScatterStrided(b, ints, 0, nil, nil) }},
		{"ReadValue", func(b *buffer.Buffer) error { var s string; return b.ReadValue(&s) }},
		{"Next", func(b *buffer.Buffer) error { _, _, err := b.Next(); return err }},
		{"Skip", func(b *buffer.Buffer) error { return b.Skip() }},
	}
	for _, tt := range tests {
		if err := tt.op(w); !errors.Is(err, buffer.ErrMode) {
			t.Errorf("%s on a writer: %v, want ErrMode", tt.name, err)
		}
	}
	if err := buffer.Write(w, ints); err != nil {
		t.Fatal(err)
	}
	if w.Bytes() != nil {
		t.Error("Bytes of a writer is not nil")
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	writes := []struct {
		name string
		op   func(b *buffer.Buffer) error
	}{
		{"Write", func(b *buffer.Buffer) error { return buffer.Write(b, ints) }},
		{"Gather", func(b *buffer.Buffer) error { return buffer.Gather(b, ints, []int{0}) }},
		{"GatherStrided", func(b *buffer.Buffer) error { return buffer.GatherStrided(b, ints, 0, nil, nil) }},
		{"WriteValue", func(b *buffer.Buffer) error { return b.WriteValue("x") }},
		{"Commit", func(b *buffer.Buffer) error { _, err := b.Commit(); return err }},
	}
	for _, tt := range writes {
		if err := tt.op(w); !errors.Is(err, buffer.ErrMode) {
			t.Errorf("%s on a reader: %v, want ErrMode", tt.name, err)
		}
	}
	if err := w.Free(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range append(tests, writes...) {
		if err := tt.op(w); !errors.Is(err, buffer.ErrFreed) {
			t.Errorf("%s after Free: %v, want ErrFreed", tt.name, err)
		}
	}
	if err := w.Reset(); !errors.Is(err, buffer.ErrFreed) {
		t.Errorf("Reset after Free: %v", err)
	}
	if err := w.Free(); !errors.Is(err, buffer.ErrDoubleFree) {
		t.Errorf("second Free: %v, want ErrDoubleFree", err)
	}
	if w.Bytes() != nil || w.Len() != 0 {
		t.Error("freed buffer still shows bytes")
	}
}

func TestSectionMismatch(t *testing.T) {
	w, _ := buffer.NewWriter()
	buffer.Write(w, []int8{1})
	buffer.Write(w, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	buffer.Write(w, []int32{7, 8})
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := buffer.Read(w, make([]int8, 1)); err != nil {
		t.Fatal(err)
	}
	err := buffer.Read(w, make([]int32, 12))
	if !errors.Is(err, buffer.ErrSectionType) {
		t.Fatalf("wrong type: %v", err)
	}
	if want := "buffer: section 1 holds 10 float64, read wants 12 int32"; !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q does not contain %q", err, want)
	}
	err = buffer.Read(w, make([]float64, 9))
	if !errors.Is(err, buffer.ErrSectionCount) || !strings.Contains(err.Error(), "holds 10 float64, read wants 9 float64") {
		t.Fatalf("wrong count: %v", err)
	}
	// The failures left the buffer at section 1.
	got := make([]float64, 10)
	if err := buffer.Read(w, got); err != nil || got[9] != 10 {
		t.Fatalf("after mismatches: %v %v", got, err)
	}
	// Named types read sections of their underlying type.
	if err := w.Skip(); err != nil {
		t.Fatal(err)
	}
	if err := w.Skip(); !errors.Is(err, buffer.ErrEnd) {
		t.Fatalf("Skip past the end: %v", err)
	}
	if err := buffer.Read(w, []int8{}); !errors.Is(err, buffer.ErrEnd) {
		t.Fatalf("Read past the end: %v", err)
	}
	if w.Sections() != 3 {
		t.Fatalf("Sections() = %d", w.Sections())
	}
}

type point struct {
	X, Y  float64
	Label string
	Tags  map[string]int
}

func TestValues(t *testing.T) {
	p := newPool(t)
	for _, o := range orders {
		w, err := buffer.NewWriter(buffer.WithOrder(o.order), buffer.WithPool(p))
		if err != nil {
			t.Fatal(err)
		}
		buffer.Write(w, []float64{1.5})
		pts := []point{{1, 2, "a", map[string]int{"x": 1}}, {3, 4, "b", nil}}
		for _, v := range []any{pts[0], "hello", pts[1], 42, []string{"p", "q"}} {
			if err := w.WriteValue(v); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteValue(make(chan int)); !errors.Is(err, buffer.ErrValue) {
			t.Fatalf("WriteValue(chan): %v, want ErrValue", err)
		}
		buffer.Write(w, []int16{-2})
		wire, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		r, err := buffer.NewReader(wire)
		if err != nil {
			t.Fatal(err)
		}
		var (
			p0, p1 point
			s      string
			n      int
			ss     []string
		)
		for i, ptr := range []any{&p0, &s, &p1, &n, &ss} {
			if err := r.ReadValue(ptr); err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
		}
		if !reflect.DeepEqual(p0, pts[0]) || s != "hello" || p1.Label != "b" || n != 42 || !slices.Equal(ss, []string{"p", "q"}) {
			t.Fatalf("values %v %q %v %d %v", p0, s, p1, n, ss)
		}
		if err := r.ReadValue(&s); !errors.Is(err, buffer.ErrEnd) {
			t.Fatalf("ReadValue past the end: %v", err)
		}
		// Sections are independent of values.
		f, i16 := make([]float64, 1), make([]int16, 1)
		if err := buffer.Read(r, f); err != nil || f[0] != 1.5 {
			t.Fatal(err)
		}
		if err := buffer.Read(r, i16); err != nil || i16[0] != -2 {
			t.Fatal(err)
		}
		// A value of the wrong type.
		r2, _ := buffer.NewReader(wire)
		if err := r2.ReadValue(&n); !errors.Is(err, buffer.ErrValue) {
			t.Fatalf("ReadValue into the wrong type: %v", err)
		}
		if err := w.Free(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriterStorage(t *testing.T) {
	p := newPool(t, buffer.WithRegionSize(64<<10))
	size := buffer.SectionSize[float64](100) + buffer.SectionSize[int32](3)
	if size != 8+800+8+16 {
		t.Fatalf("SectionSize sum %d", size)
	}
	w, err := buffer.NewWriter(buffer.WithPool(p), buffer.WithStaticSize(size))
	if err != nil {
		t.Fatal(err)
	}
	before := p.Stats()
	buffer.Write(w, make([]float64, 100))
	buffer.Write(w, []int32{1, 2, 3})
	if after := p.Stats(); after.Gets != before.Gets {
		t.Fatalf("writing within the reserved size took %d more blocks", after.Gets-before.Gets)
	}
	// Growing moves the storage to larger blocks and frees the old ones.
	for range 100 {
		if err := buffer.Write(w, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.Stats(); s.Gets-s.Puts != 1 {
		t.Fatalf("%d blocks held by one buffer", s.Gets-s.Puts)
	}
	wire, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if len(wire) != buffer.HeaderSize+size+100*buffer.SectionSize[byte](1000) {
		t.Fatalf("wire of %d bytes", len(wire))
	}
	// Reset reuses the storage.
	if err := w.Reset(); err != nil {
		t.Fatal(err)
	}
	buffer.Write(w, []uint16{9})
	wire, _ = w.Commit()
	r, _ := buffer.NewReader(wire)
	got := make([]uint16, 1)
	if err := buffer.Read(r, got); err != nil || got[0] != 9 {
		t.Fatalf("after Reset: %v %v", got, err)
	}
	if err := w.Free(); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.InUse != 0 {
		t.Fatalf("%d bytes in use after Free", s.InUse)
	}
	// A reader can be reset into a writer too.
	if err := r.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := buffer.Write(r, []int8{1}); err != nil {
		t.Fatal(err)
	}
	// Options.
	if _, err := buffer.NewWriter(buffer.WithOrder(nil)); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("nil order: %v", err)
	}
	if _, err := buffer.NewWriter(buffer.WithStaticSize(-1)); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("negative size: %v", err)
	}
	if buffer.SectionSize[int8](-1) != 0 || buffer.SectionSize[int64](buffer.MaxCount+1) != 0 || buffer.SectionSize[complex128](buffer.MaxCount) != 8+16*buffer.MaxCount {
		t.Fatal("SectionSize of an impossible count is not 0")
	}
}

func TestReaderCorrupt(t *testing.T) {
	w, _ := buffer.NewWriter(buffer.WithOrder(binary.LittleEndian))
	buffer.Write(w, []int32{1, 2, 3})
	w.WriteValue("v")
	good, _ := w.Commit()
	mutate := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	tests := []struct {
		name string
		wire []byte
		want error // from NewReader; nil: NewReader succeeds, Read fails
	}{
		{"empty", nil, buffer.ErrCorrupt},
		{"short", good[:10], buffer.ErrCorrupt},
		{"magic", mutate(func(b []byte) []byte { b[0] = 'x'; return b }), buffer.ErrCorrupt},
		{"version", mutate(func(b []byte) []byte { b[4] = 2; return b }), buffer.ErrCorrupt},
		{"order", mutate(func(b []byte) []byte { b[5] = 'X'; return b }), buffer.ErrCorrupt},
		{"truncated", good[:len(good)-1], buffer.ErrCorrupt},
		{"static unaligned", mutate(func(b []byte) []byte { b[8]++; return b }), buffer.ErrCorrupt},
		{"static too long", mutate(func(b []byte) []byte { b[15] = 1; return b }), buffer.ErrCorrupt},
		{"bad kind", mutate(func(b []byte) []byte { b[buffer.HeaderSize+7] = 99; return b }), nil},
		{"count too large", mutate(func(b []byte) []byte { b[buffer.HeaderSize] = 200; return b }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := buffer.NewReader(tt.wire)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("NewReader: %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := buffer.Read(r, make([]int32, 3)); !errors.Is(err, buffer.ErrCorrupt) {
				t.Fatalf("Read: %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestBufferZeroValue(t *testing.T) {
	var w buffer.Buffer
	if w.Len() != buffer.HeaderSize {
		t.Fatalf("Len of the zero Buffer: %d", w.Len())
	}
	if err := buffer.Write(&w, []uint32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteValue("v"); err != nil {
		t.Fatal(err)
	}
	wire, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if w.Order() != binary.NativeEndian && w.Order().Uint16([]byte{1, 0}) != binary.NativeEndian.Uint16([]byte{1, 0}) {
		t.Fatalf("zero Buffer order %v is not native", w.Order())
	}
	r, err := buffer.NewReader(wire)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 2)
	var s string
	if err := buffer.Read(r, got); err != nil || got[1] != 2 || r.ReadValue(&s) != nil || s != "v" {
		t.Fatalf("read %v %q %v", got, s, err)
	}
	var empty buffer.Buffer
	wire, err = empty.Commit()
	if err != nil || len(wire) != buffer.HeaderSize {
		t.Fatalf("empty commit: %d bytes, %v", len(wire), err)
	}
}
