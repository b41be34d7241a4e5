package am

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

type fixed struct {
	A int8
	B [3]float32
	C complex128
}

// Each type gets the codec its kind calls for, and values round-trip.
func TestCodecs(t *testing.T) {
	check := func(name string, kind codecKind, roundTrip func() error) {
		t.Helper()
		if err := roundTrip(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	check("int64", rawValue, func() error { return roundTrip[int64](rawValue, -42) })
	check("struct{}", rawValue, func() error { return roundTrip(rawValue, struct{}{}) })
	check("fixed", rawValue, func() error { return roundTrip(rawValue, fixed{-1, [3]float32{1, 2, 3}, 1i}) })
	check("[]fixed", rawSlice, func() error { return roundTrip(rawSlice, []fixed{{A: 1}, {A: 2}}) })
	check("[]byte", rawSlice, func() error { return roundTrip(rawSlice, []byte("abc")) })
	check("string", rawString, func() error { return roundTrip(rawString, "zürich") })
	check("[]string", gobValue, func() error { return roundTrip(gobValue, []string{"a", "b"}) })
	check("*int", gobValue, func() error { v := 3; return roundTrip(gobValue, &v) })
	check("[]struct{}", gobValue, func() error { return roundTrip(gobValue, make([]struct{}, 3)) })
	check("struct with a string", gobValue, func() error {
		return roundTrip(gobValue, struct{ S string }{"x"})
	})
}

func roundTrip[T any](kind codecKind, v T) error {
	c := newCodec[T]()
	if c.kind != kind {
		return fmt.Errorf("codec kind %d, want %d", c.kind, kind)
	}
	head := []byte{9, 8}
	b, err := c.encode(head, &v)
	if err != nil {
		return err
	}
	if b[0] != 9 || b[1] != 8 {
		return fmt.Errorf("head lost: %v", b[:2])
	}
	var got T
	if err := c.decode(b[2:], &got); err != nil {
		return err
	}
	if !reflect.DeepEqual(got, v) {
		return fmt.Errorf("decoded %#v, want %#v", got, v)
	}
	return nil
}

// Decoders take any bytes: a value, or an error wrapping comm.ErrType.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(make([]byte, 40))
	f.Add([]byte("\x0c\xff\x81\x02\x01\x02\xff\x82\x00\x01\x0c\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAny[int64](t, data)
		decodeAny[fixed](t, data)
		decodeAny[[]fixed](t, data)
		decodeAny[string](t, data)
		decodeAny[map[string][]int](t, data)
		decodeAny[*fixed](t, data)
	})
}

func decodeAny[T any](t *testing.T, data []byte) {
	c := newCodec[T]()
	var v T
	if err := c.decode(data, &v); err != nil && !errors.Is(err, comm.ErrType) {
		t.Errorf("decoding %d bytes as %T: %v, not ErrType", len(data), v, err)
	}
}

// A reply, a request's header and a report take any bytes: an outcome,
// or an error, never a panic.
func FuzzReply(f *testing.F) {
	f.Add([]byte{statusOK, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{statusPanic, 'x'})
	f.Add([]byte{nStatus})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newCodec[int64]()
		fut := &Future[int64]{name: "h", codec: &c}
		if err := (*replySink[int64])(fut).Take(data, nil, len(data)); err != nil {
			t.Fatal(err)
		}
		if _, err := fut.result(); err != nil && !errors.Is(err, comm.ErrType) && !errors.As(err, new(*HandlerError)) {
			t.Errorf("reply %v: %v", data, err)
		}
		for _, kind := range []int{kindPost, kindCall} {
			in := &inbound{data: data}
			if _, _, err := in.key(kind); err == nil {
				if kind == kindCall {
					in.callTag()
				}
				in.payload(kind)
			}
		}
		ep := &Endpoint{}
		ep.handlers.Store(&map[uint64]entry{})
		ep.takeReport(1, &inbound{data: data})
		if ep.handled.Load() != 1 {
			t.Errorf("a report of %d bytes was not counted", len(data))
		}
	})
}

// A request header round-trips.
func TestRequestHead(t *testing.T) {
	h := requestHead(kindCall, 0x0102030405060708, 3, 77)
	in := &inbound{data: append(h, 5)}
	key, epoch, err := in.key(kindCall)
	if err != nil || key != 0x0102030405060708 || epoch != 3 || in.callTag() != 77 || string(in.payload(kindCall)) != "\x05" {
		t.Errorf("call head: key %#x, epoch %d, %v, tag %d, payload %v", key, epoch, err, in.callTag(), in.payload(kindCall))
	}
	p := &inbound{data: append(requestHead(kindPost, 9, 4, 0), 6)}
	if key, epoch, err := p.key(kindPost); err != nil || key != 9 || epoch != 4 || string(p.payload(kindPost)) != "\x06" {
		t.Errorf("post head: key %d, epoch %d, %v", key, epoch, err)
	}
}
