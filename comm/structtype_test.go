package comm_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
)

// Struct types of the tests. reIm and xy have one layout (two float64s,
// the layout of complex128's memory but not its Type); intFloat is as long
// and laid out otherwise.
type (
	reIm     struct{ Re, Im float64 }
	xy       struct{ X, Y float64 }
	intFloat struct {
		N int64
		F float64
	}
	celsius float64
)

// structType is TypeOf of T, which must be a struct type.
func structType[T any](t testing.TB) comm.Type {
	t.Helper()
	typ, err := comm.TypeOf(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func TestTypeOfNumbers(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want comm.Type
	}{
		{reflect.TypeFor[byte](), comm.Byte},
		{reflect.TypeFor[int32](), comm.Int32},
		{reflect.TypeFor[uintptr](), comm.Uintptr},
		{reflect.TypeFor[complex128](), comm.Complex128},
		{reflect.TypeFor[celsius](), comm.Float64},
	} {
		if got, err := comm.TypeOf(c.t); got != c.want || err != nil {
			t.Errorf("TypeOf(%v) = %v, %v; want %v", c.t, got, err, c.want)
		}
	}
}

// Struct types: one Type per layout, of the layout's size, named after
// the Go types that have it; another layout, another Type.
func TestTypeOfStructs(t *testing.T) {
	a, b, c := structType[reIm](t), structType[xy](t), structType[intFloat](t)
	if a != b {
		t.Errorf("reIm %d and xy %d, of one layout, differ", a, b)
	}
	if a == c || a == comm.Complex128 {
		t.Errorf("reIm %d, intFloat %d, complex128 %d: want three types", a, c, comm.Complex128)
	}
	if !a.Valid() || a.Size() != 16 || c.Size() != 16 {
		t.Errorf("valid %v, sizes %d and %d", a.Valid(), a.Size(), c.Size())
	}
	if s := a.String(); !strings.Contains(s, "comm_test.reIm") || !strings.Contains(s, "comm_test.xy") {
		t.Errorf("name %q, want both Go types", s)
	}
	type padded struct {
		X, Y, Z float64
		ID      int32
		Kind    uint8
		On      bool
		_       [2]byte
		Cell    [3]struct {
			I int16
			F float32
		}
	}
	p := structType[padded](t)
	if p.Size() != int(unsafe.Sizeof(padded{})) || !p.Valid() {
		t.Errorf("padded: size %d, valid %v", p.Size(), p.Valid())
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[bool](), reflect.TypeFor[[3]float32](), reflect.TypeFor[[2][2]int8]()} {
		if s, err := comm.TypeOf(typ); err != nil || !s.Valid() || s.Size() != int(typ.Size()) {
			t.Errorf("TypeOf(%v) = %v (size %d), %v", typ, s, s.Size(), err)
		}
	}
	// [2]int32 and struct{A, B int32} are not one layout: an array is not
	// a struct.
	if x, y := structType[[2]int32](t), structType[struct{ A, B int32 }](t); x == y {
		t.Errorf("[2]int32 and a struct of two int32 share type %d", x)
	}
	// Offsets count: the same fields, padded otherwise.
	type early struct {
		A int8
		B int64
	}
	type packed struct {
		B int64
		A int8
	}
	if x, y := structType[early](t), structType[packed](t); x == y {
		t.Errorf("two orders of fields share type %d", x)
	}
}

// Types that do not travel as their memory fail with ErrType, naming the
// type and what rules it out.
func TestTypeOfRejects(t *testing.T) {
	type node struct {
		V    float64
		Next *node
	}
	type deep struct {
		A [2]struct {
			N    int
			Name string
		}
	}
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[*int](), "it is a pointer"},
		{reflect.TypeFor[string](), "it is a string"},
		{reflect.TypeFor[[]float64](), "it is a slice"},
		{reflect.TypeFor[map[int]int](), "it is a map"},
		{reflect.TypeFor[any](), "it is an interface"},
		{reflect.TypeFor[chan int](), "it is a channel"},
		{reflect.TypeFor[func()](), "it is a func"},
		{reflect.TypeFor[unsafe.Pointer](), "it is a pointer"},
		{reflect.TypeFor[node](), "Next (*comm_test.node) is a pointer"},
		{reflect.TypeFor[deep](), "A[0].Name (string) is a string"},
		{reflect.TypeFor[[4]*int](), "[0] (*int) is a pointer"},
		{reflect.TypeFor[struct{}](), "no size"},
		{reflect.TypeFor[[0]float64](), "no size"},
	} {
		_, err := comm.TypeOf(c.t)
		if !errors.Is(err, comm.ErrType) || !strings.Contains(fmt.Sprint(err), c.want) || !strings.Contains(fmt.Sprint(err), c.t.String()) {
			t.Errorf("TypeOf(%v): %v, want ErrType saying %q", c.t, err, c.want)
		}
	}
	if _, err := comm.TypeOf(nil); !errors.Is(err, comm.ErrArg) {
		t.Errorf("TypeOf(nil): %v, want ErrArg", err)
	}
}

// A receive of another struct type, or of a number type, fails with
// ErrType naming both types and consumes the message; one of the same
// layout, or of bytes, succeeds.
func TestStructTypeRecv(t *testing.T) {
	a, b, c := structType[reIm](t), structType[intFloat](t), structType[xy](t)
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if err := w.Send(garbage(20), a, 1, 0); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("send of 20 bytes of a 16-byte struct type: %v, want ErrArg", err)
			}
			for _, size := range []int{1, 8 << 10} { // eager and rendezvous
				for range 4 {
					if err := w.Send(garbage(size*16), a, 1, size); err != nil {
						return err
					}
				}
			}
			return nil
		}
		for _, size := range []int{1, 8 << 10} {
			buf := garbage(size * 16)
			_, err := w.Recv(buf, b, 0, size)
			if !errors.Is(err, comm.ErrType) || !strings.Contains(err.Error(), "reIm") || !strings.Contains(err.Error(), "intFloat") {
				return fmt.Errorf("reIm received as intFloat: %v, want ErrType naming both", err)
			}
			if _, err := w.Recv(buf, comm.Complex128, 0, size); !errors.Is(err, comm.ErrType) {
				return fmt.Errorf("reIm received as complex128: %v, want ErrType", err)
			}
			if st, err := w.Recv(buf, c, 0, size); err != nil || st.Count != size {
				return fmt.Errorf("reIm received as xy: %v %v, want %d elements", st, err, size)
			}
			if st, err := w.Recv(buf, comm.Byte, 0, size); err != nil || st.Count != 16*size {
				return fmt.Errorf("reIm received as bytes: %v %v", st, err)
			}
		}
		return nil
	}, mpgo.WithEagerLimit(4<<10))
}

// Mismatched element types in collectives fail as number types do: every
// rank of an Allreduce, Allgather and Alltoall, with every algorithm; and
// of the same layout they are one type.
func TestMismatchStructTypes(t *testing.T) {
	a, b, c := structType[reIm](t), structType[intFloat](t), structType[xy](t)
	for _, n := range []int{2, 5, 8} {
		for _, other := range []comm.Type{b, comm.Complex128} {
			typeOf := func(w *comm.Comm) comm.Type {
				if w.Rank() == n/2 {
					return other
				}
				return a
			}
			expectAll(t, outcome(t, n, comm.CollAllreduce, func(w *comm.Comm) error {
				return w.Allreduce(input(w.Rank(), 300, 1), garbage(300*esz), typeOf(w), affine)
			}), comm.ErrType)
			expectAll(t, outcome(t, n, comm.CollAllgather, func(w *comm.Comm) error {
				return w.Allgather(input(w.Rank(), 3, 1), garbage(3*n*esz), typeOf(w))
			}), comm.ErrType)
			expectAll(t, outcome(t, n, comm.CollAlltoall, func(w *comm.Comm) error {
				return w.Alltoall(garbage(2*n*esz), garbage(2*n*esz), typeOf(w))
			}), comm.ErrType)
			expectBcast(t, outcome(t, n, comm.CollBcast, func(w *comm.Comm) error {
				return w.Bcast(garbage(40*esz), typeOf(w), 0)
			}), comm.ErrType, 0, n/2)
		}
		res := outcome(t, n, comm.CollAllreduce, func(w *comm.Comm) error {
			typ := a
			if w.Rank()%2 == 1 {
				typ = c
			}
			recv := garbage(300 * esz)
			if err := w.Allreduce(input(w.Rank(), 300, 1), recv, typ, affine); err != nil {
				return err
			}
			if string(recv) != string(fold(0, n, 300, 1)) {
				return errors.New("wrong result")
			}
			return nil
		})
		for alg, errs := range res {
			for r, err := range errs {
				if err != nil {
					t.Errorf("%d ranks, %v: rank %d: reIm and xy: %v", n, alg, r, err)
				}
			}
		}
	}
}

// A message from another process may arrive before this process first
// uses its struct type (its receive is posted later): once the type is
// registered, the receive takes it. A message of a layout no type here
// has fails with ErrType naming its fingerprint.
func TestStructTypeRegisteredAfterArrival(t *testing.T) {
	type late struct {
		A int16
		B [3]float32
	}
	d := &envelopeOf{}
	w, err := comm.NewWorld(2, comm.Config{Local: []int{0}, Device: d, Process: func(r int) int { return r }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := w.Comm(0)
	if err := c.Send(nil, comm.Byte, 1, 0); err != nil { // for the context rank 1's messages carry
		t.Fatal(err)
	}
	fp := comm.FingerprintOf(reflect.TypeFor[late]())
	for i, f := range []uint32{fp, fp ^ 0x5a5a5a5a} {
		env := device.Envelope{Context: d.env.Context, Source: 1, Type: 16, Fingerprint: f, Len: 32, Tag: i}
		if kept, err := d.e.Arrive(1, 0, env, device.Bytes(payload(32, uint64(i)))); kept || err != nil { // copied: eager
			t.Fatalf("arrival %d: kept %v, %v", i, kept, err)
		}
	}
	typ := structType[late](t)
	buf := make([]byte, 32)
	if st, err := c.Recv(buf, typ, 1, 0); err != nil || st.Count != 2 || string(buf) != string(payload(32, 0)) {
		t.Errorf("receive of a type registered after its message arrived: %v %v", st, err)
	}
	_, err = c.Recv(buf, typ, 1, 1)
	if want := fmt.Sprintf("unknown here (fingerprint %08x)", fp^0x5a5a5a5a); !errors.Is(err, comm.ErrType) || !strings.Contains(err.Error(), want) {
		t.Errorf("receive of a layout unknown here: %v, want ErrType saying %q", err, want)
	}
}

// envelopeOf is a device that keeps the engine it is started with and the
// envelope of the last message sent through it, which it drops.
type envelopeOf struct {
	engineOf
	env device.Envelope
}

func (d *envelopeOf) Send(_, _ int, env device.Envelope, _ []byte, done func(error)) error {
	d.env = env
	done(nil)
	return nil
}
