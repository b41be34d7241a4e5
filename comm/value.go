package comm

import (
	"fmt"
	"math"
	"reflect"

	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm/internal/engine"
)

// The value path: any Go value that encoding/gob can encode travels as a
// message of type [Value]: a value of a fixed-size type as its memory
// (value_memory.go), one of a type without interfaces as a gob stream
// whose type descriptions both sides cache (value_stream.go), any other
// as a buffer.Buffer (the mpjbuf layout) whose dynamic part holds a fresh
// gob stream. The encoded bytes are handed
// over (SendOwned), so the only copies are the encoding's own.

func encodeValue(v any) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("comm: encode a nil value: %w", ErrArg)
	}
	if data, ok := encodeMemory(v); ok {
		return data, nil
	}
	if data, ok := encodeStream(v); ok {
		return data, nil
	}
	b, err := buffer.NewWriter()
	if err != nil {
		return nil, err
	}
	if err := b.WriteValue(v); err != nil {
		return nil, fmt.Errorf("comm: encode %T: %w: %v", v, ErrArg, err)
	}
	return b.Commit()
}

func decodeValue(data []byte, ptr any) error {
	var err error
	switch {
	case isMemory(data):
		err = decodeMemory(data, ptr)
	case isStream(data):
		err = decodeStream(data, ptr)
	default:
		var b *buffer.Buffer
		if b, err = buffer.NewReader(data); err == nil {
			err = b.ReadValue(ptr)
		}
	}
	if err != nil {
		return fmt.Errorf("comm: decode into %T: %w: %v", ptr, ErrType, err)
	}
	return nil
}

func checkPtr(ptr any) error {
	v := reflect.ValueOf(ptr)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("comm: receive a value into %T: need a non-nil pointer: %w", ptr, ErrArg)
	}
	return nil
}

// SendValue sends v, any Go value encoding/gob can encode, to rank dst, for
// [Comm.RecvValue] (or IrecvValue) to decode; the receiver may decode into
// any type gob converts v's to.
//
// Cost: a value of a fixed-size type made of exported numbers, bools,
// arrays and structs (no pointers, strings, slices, maps or interfaces,
// no GobEncode or MarshalBinary methods) travels as its memory with a
// description of its type: about as cheap as a typed message of its size
// (an 81-byte struct round-trips between goroutine ranks in about twice
// the time of typed.Send/Recv of it). It overwrites the receiver's *ptr
// whole; gob would leave a field that was sent zero untouched. Any other
// value travels by gob, with the descriptions of its types cached on both
// sides (value_stream.go): a small struct with a string and a slice
// round-trips in a few microseconds and a dozen allocations. A value that
// holds interfaces anywhere in its type is a fresh gob stream per
// message, type descriptions included: tens of microseconds and a few
// hundred allocations on both sides for a small one
// (BenchmarkValueRoundTrip). So send numbers and structs of numbers with
// package typed, or batch small values into one, where it matters. A value
// holding interfaces needs gob.Register of every concrete type it carries,
// in every process, as for gob itself.
func (c *Comm) SendValue(v any, dst, tag int) error {
	data, err := encodeValue(v)
	if err != nil {
		return err
	}
	return c.send(data, Value, dst, tag, engine.ModeOwned)
}

// IsendValue starts sending v as [Comm.SendValue] does (at its cost); v is
// encoded before IsendValue returns, so it may be modified at once.
func (c *Comm) IsendValue(v any, dst, tag int) (*Request, error) {
	data, err := encodeValue(v)
	if err != nil {
		return nil, err
	}
	return c.isend(data, Value, dst, tag, engine.ModeOwned)
}

// RecvValue receives a value sent with SendValue into *ptr (ptr must be a
// non-nil pointer). Status.Count is the size in bytes of the value's
// encoding as it travelled (the number a probe of it reports), not a
// number of values; see [Status]. A message
// that is not a value, or does not decode into *ptr, fails with ErrType and
// is consumed.
func (c *Comm) RecvValue(ptr any, src, tag int) (Status, error) {
	if err := checkPtr(ptr); err != nil {
		return Status{}, err
	}
	data, st, err := c.RecvOwned(Value, src, tag)
	if err != nil || src == ProcNull {
		return st, err // from ProcNull: nothing arrives, *ptr is left alone
	}
	return st, decodeValue(data, ptr)
}

// IrecvValue starts receiving a value sent with SendValue into *ptr (ptr
// must be a non-nil pointer, and *ptr must not be touched until the
// request completes). The value is decoded as the message is delivered,
// on whichever goroutine delivers it; a message that does not decode into
// *ptr fails the request with ErrType. Status.Count is the encoded size
// in bytes.
func (c *Comm) IrecvValue(ptr any, src, tag int) (*Request, error) {
	if err := checkPtr(ptr); err != nil {
		return nil, err
	}
	return c.IrecvInto(valueSink{ptr}, Value, src, tag)
}

// valueSink decodes a value message into ptr as it is delivered.
type valueSink struct{ ptr any }

func (valueSink) Cap() int { return math.MaxInt }

func (k valueSink) Take(data []byte, from Remote, n int) error {
	if from != nil {
		data = make([]byte, n)
		if err := from.Pull(data); err != nil {
			return err
		}
	}
	return decodeValue(data, k.ptr)
}
