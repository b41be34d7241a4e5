package comm

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// Values of other types travel as gob streams whose type descriptions
// both sides cache.
//
// Each message is a whole gob stream: the descriptions of the value's
// types (the prefix), then the value, so that any receiver can decode it
// afresh. What costs is making a stream afresh: the encoder describes the
// types and the decoder compiles its decoding of them, every message. So
// the sender keeps, per Go type, encoders that have sent the prefix once
// (each further Encode writes the value alone, which follows the prefix
// as it would in a fresh stream: a type's gob identifiers are fixed for
// the life of the process), and sends the cached prefix with each value;
// the receiver keeps, per prefix, decoders that have read it once, and
// gives them only the value. This is only sound when a type's prefix is
// all the stream ever describes: a value holding an interface describes
// each concrete type it meets when it meets it, so such types (and any
// other gob refuses to describe up front) go by a fresh stream each time.
//
// A stream message is streamMagic, the prefix's length (uint32,
// little-endian), the prefix, the value's gob message.

var streamMagic = [4]byte{'m', 'p', 'g', 's'}

const streamHeader = len(streamMagic) + 4

// streamEncoder is an encoder that has sent its type's prefix: each Encode
// writes one value message into buf.
type streamEncoder struct {
	enc *gob.Encoder
	buf bytes.Buffer
}

// streamType is a Go type's cached prefix and its pool of encoders; the
// zero value (nil prefix) marks a type that goes by a fresh stream.
type streamType struct {
	prefix []byte
	pool   *sync.Pool // of *streamEncoder
}

var streamTypes sync.Map // reflect.Type → *streamType

// encodeStream returns v (of a type without interfaces) as a stream
// message, or ok false when v must go by a fresh stream.
func encodeStream(v any) (data []byte, ok bool) {
	t := reflect.TypeOf(v)
	st, err := streamTypeOf(t, v)
	if err != nil || st.prefix == nil {
		return nil, false
	}
	se := st.pool.Get().(*streamEncoder)
	se.buf.Reset()
	if err := se.enc.Encode(v); err != nil {
		return nil, false // the fresh stream reports it
	}
	data = make([]byte, streamHeader+len(st.prefix)+se.buf.Len())
	copy(data, streamMagic[:])
	binary.LittleEndian.PutUint32(data[len(streamMagic):], uint32(len(st.prefix)))
	copy(data[streamHeader:], st.prefix)
	copy(data[streamHeader+len(st.prefix):], se.buf.Bytes())
	st.pool.Put(se)
	return data, true
}

// streamTypeOf returns t's cached prefix, making it with v (of type t) the
// first time.
func streamTypeOf(t reflect.Type, v any) (*streamType, error) {
	if s, ok := streamTypes.Load(t); ok {
		return s.(*streamType), nil
	}
	st := &streamType{}
	if !hasInterface(t, map[reflect.Type]bool{}) {
		prefix, err := describe(v)
		if err != nil {
			return nil, err // not cached: the value, not the type, may be at fault
		}
		// Encoders are primed with a zero value of t (a value may be
		// large, and a pool makes new encoders whenever it likes), which
		// gob must describe as it described v.
		z := zeroOf(t)
		if zp, err := describe(z); err == nil && bytes.Equal(zp, prefix) {
			st.prefix = prefix
			st.pool = &sync.Pool{New: func() any { return newStreamEncoder(prefix, z) }}
		}
	}
	s, _ := streamTypes.LoadOrStore(t, st)
	return s.(*streamType), nil
}

// describe returns the type descriptions a fresh gob stream of v starts
// with (none for gob's predefined types).
func describe(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	n, err := prefixLen(buf.Bytes())
	if err != nil {
		return nil, err
	}
	return append([]byte{}, buf.Bytes()[:n]...), nil
}

// zeroOf returns a zero value of t that gob can encode: pointers point to
// zero values (gob refuses nil ones).
func zeroOf(t reflect.Type) any {
	if t.Kind() != reflect.Pointer {
		return reflect.Zero(t).Interface()
	}
	p := reflect.New(t.Elem())
	for e := p.Elem(); e.Kind() == reflect.Pointer; e = e.Elem() {
		e.Set(reflect.New(e.Type().Elem()))
	}
	return p.Interface()
}

// newStreamEncoder returns an encoder that has sent the prefix, by
// encoding v once (streamTypeOf checked that gob describes it so).
func newStreamEncoder(prefix []byte, v any) *streamEncoder {
	se := &streamEncoder{}
	se.enc = gob.NewEncoder(&se.buf)
	if err := se.enc.Encode(v); err != nil || !bytes.HasPrefix(se.buf.Bytes(), prefix) {
		panic(fmt.Sprintf("comm: gob described %T differently the second time (%v)", v, err))
	}
	return se
}

// prefixLen returns the length of the type descriptions at the start of a
// gob stream: its messages (each a byte count, then a type identifier,
// negative for a description) up to the first value.
func prefixLen(stream []byte) (int, error) {
	n := 0
	for n < len(stream) {
		size, k := gobUint(stream[n:])
		if k == 0 || size > uint64(len(stream)-n-k) {
			return 0, errors.New("comm: a malformed gob stream")
		}
		id, _ := gobUint(stream[n+k:])
		if id&1 == 0 { // gob's signed integers: the low bit is the sign
			return n, nil // a value
		}
		n += k + int(size)
	}
	return 0, errors.New("comm: a gob stream without a value")
}

// gobUint reads one of gob's unsigned integers (a byte below 0x80 is the
// value; otherwise its negation is the count of big-endian bytes that
// follow) and returns it and its length, or 0, 0 when b is too short.
func gobUint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	n := -int(int8(b[0]))
	if n > 8 || len(b) < 1+n {
		return 0, 0
	}
	var x uint64
	for _, c := range b[1 : 1+n] {
		x = x<<8 | uint64(c)
	}
	return x, 1 + n
}

// hasInterface reports whether a value of t can hold an interface, so that
// gob describes types as it meets them.
func hasInterface(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return hasInterface(t.Elem(), seen)
	case reflect.Map:
		return hasInterface(t.Key(), seen) || hasInterface(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if hasInterface(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// isStream reports whether data is a stream message.
func isStream(data []byte) bool {
	return len(data) >= streamHeader && [4]byte(data[:4]) == streamMagic
}

// streamDecoder is a decoder that has read one prefix; it reads the values
// that follow it from r.
type streamDecoder struct {
	dec *gob.Decoder
	r   bytes.Reader
}

var streamDecoders sync.Map // prefix (string) → *sync.Pool of *streamDecoder

// decodeStream decodes the stream message data into *ptr: with a decoder
// that has read its prefix when there is one, else afresh (and keeps that
// decoder).
func decodeStream(data []byte, ptr any) error {
	n := binary.LittleEndian.Uint32(data[len(streamMagic):])
	if uint64(n) > uint64(len(data)-streamHeader) {
		return fmt.Errorf("a stream message of %d bytes with a prefix of %d", len(data), n)
	}
	prefix, value := data[streamHeader:streamHeader+int(n)], data[streamHeader+int(n):]
	if k, err := prefixLen(value); err != nil || k != 0 {
		// Not the value alone (a corrupt message): a decoder that read it
		// might fail the next ones; decode it afresh and keep nothing.
		return gob.NewDecoder(bytes.NewReader(data[streamHeader:])).Decode(ptr)
	}
	pool, _ := streamDecoders.Load(string(prefix))
	if pool != nil {
		if sd, _ := pool.(*sync.Pool).Get().(*streamDecoder); sd != nil {
			sd.r.Reset(value)
			if err := sd.dec.Decode(ptr); err != nil {
				return err // sd is dropped: a failed decoder's state is not to be trusted
			}
			if sd.r.Len() == 0 {
				pool.(*sync.Pool).Put(sd)
			}
			return nil
		}
	}
	sd := &streamDecoder{}
	sd.r.Reset(data[streamHeader:])
	sd.dec = gob.NewDecoder(&sd.r)
	if err := sd.dec.Decode(ptr); err != nil {
		return err
	}
	if sd.r.Len() != 0 {
		return nil // bytes beyond the value: decoded, but the decoder is not kept
	}
	if pool == nil {
		pool, _ = streamDecoders.LoadOrStore(string(prefix), &sync.Pool{})
	}
	pool.(*sync.Pool).Put(sd)
	return nil
}
