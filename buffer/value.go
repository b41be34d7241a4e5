package buffer

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
)

// The dynamic part of a Buffer holds Go values of any type encoding/gob
// handles (structs, maps, strings, slices of them), as one gob stream: a
// type is described once per Buffer, however many values of it follow.
// Values are read back in the order they were written, independently of
// the numeric sections.

// WriteValue appends v, gob-encoded, to b's dynamic part. b must be writing.
// A value gob cannot encode fails with [ErrValue] and adds nothing that
// the reader would see as a value.
func (b *Buffer) WriteValue(v any) error {
	if err := b.writable("write value"); err != nil {
		return err
	}
	if b.enc == nil {
		b.enc = gob.NewEncoder(&b.dyn)
	}
	if err := b.enc.Encode(v); err != nil {
		return fmt.Errorf("buffer: write value %d (%T): %w: %w", b.values, v, ErrValue, err)
	}
	b.values++
	return nil
}

// ReadValue decodes b's next value into ptr, a non-nil pointer to a variable
// of the written value's type (or one gob can decode it into). b must be
// reading. Past the last value it fails with [ErrEnd]; a value that cannot
// be decoded into ptr, or a malformed stream, fails with [ErrValue].
func (b *Buffer) ReadValue(ptr any) error {
	if err := b.readable("read value"); err != nil {
		return err
	}
	if b.dec == nil {
		b.dr.Reset(b.dynamic)
		b.dec = gob.NewDecoder(&b.dr)
	}
	if err := b.dec.Decode(ptr); err != nil {
		if errors.Is(err, io.EOF) && b.dr.Len() == 0 {
			return fmt.Errorf("buffer: read value %d: past the last value: %w", b.values, ErrEnd)
		}
		return fmt.Errorf("buffer: read value %d into %T: %w: %w", b.values, ptr, ErrValue, err)
	}
	b.values++
	return nil
}
