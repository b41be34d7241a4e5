package buffer

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
)

// Wire format of a [Buffer] (all integers in the buffer's byte order, named
// by the header; every section starts 8-byte aligned):
//
//	header   24 bytes: "mpgb", version 1, order 'L' or 'B', 2 zero bytes,
//	         static length (uint64), dynamic length (uint64)
//	static   sections, one after another, each
//	           8 bytes: kind<<56 | count (uint64)
//	           count elements of kind, then zeros up to a multiple of 8
//	dynamic  a gob stream of the values written, in order
const (
	// HeaderSize is the size of a Buffer's wire header.
	HeaderSize = 24
	// SectionHeaderSize is the size of a section's header.
	SectionHeaderSize = 8
	// MaxCount is the largest element count of one section.
	MaxCount = 1<<56 - 1

	wireVersion = 1
)

var wireMagic = [4]byte{'m', 'p', 'g', 'b'}

// SectionSize returns the bytes a section of count elements of T occupies in
// the static part of a [Buffer], header and padding included: what
// [WithStaticSize] wants summed over a message's sections. It returns 0 for
// count outside [0, MaxCount] or too large to address.
func SectionSize[T Number](count int) int {
	return sectionSize(KindOf[T](), count)
}

func sectionSize(k Kind, count int) int {
	size := k.Size()
	if count < 0 || count > MaxCount || count > (maxInt-2*SectionHeaderSize)/size {
		return 0
	}
	return SectionHeaderSize + roundUp(count*size, 8)
}

const maxInt = int(^uint(0) >> 1)

// Buffer is a message buffer of typed sections, after the mpjbuf buffering
// layer of MPJ Express: a static part of numeric sections (each a header of
// element kind and count, then the elements, 8-byte aligned) and a dynamic
// part of gob-encoded Go values.
//
// A Buffer is either writing or reading. [NewWriter] makes one for
// writing: [Write], [Gather] and [GatherStrided] append sections,
// [Buffer.WriteValue] appends values; [Buffer.Commit] seals it, returns the
// wire bytes and turns it to reading from the start. [NewReader] makes a
// reading Buffer over received wire bytes: [Read], [Scatter] and
// [ScatterStrided] take the sections in the order they were written, each
// into a slice of the same element type and count, and [Buffer.ReadValue]
// takes the values in order (sections and values are two independent
// sequences). Writing a reading Buffer or reading a writing one fails with
// [ErrMode].
//
// Numbers travel in the byte order chosen with [WithOrder], the machine's
// by default. In the machine's order the elements are copied as memory
// (memmove); in the other order each element's bytes are reversed.
//
// The zero Buffer is an empty writer in the machine's byte order with heap
// storage. A Buffer is not safe for concurrent use. It must be Freed when it
// holds memory of a [Pool] ([WithPool]); freeing one without is optional.
type Buffer struct {
	mode mode
	big  bool // numbers are big-endian on the wire
	swap bool // big differs from the machine's order

	// Writing: store holds the header and the static part so far; after
	// Commit, the whole wire.
	pool  *Pool
	store []byte
	owned bool // store is a block of pool
	dyn   bytes.Buffer
	enc   *gob.Encoder

	// Reading.
	wire    []byte
	static  []byte
	dynamic []byte
	pos     int // offset in static of the next section
	dr      bytes.Reader
	dec     *gob.Decoder
	scratch []uint64 // aligned staging for swapped or unaligned payloads

	sections int // sections written, or read
	values   int // values written, or read
}

type mode uint8

const (
	modeWrite mode = iota // the zero Buffer is writing
	modeRead
	modeFreed
)

// BufferOption configures a writing [Buffer]; see [NewWriter].
type BufferOption func(*bufferConfig)

type bufferConfig struct {
	pool       *Pool
	order      binary.ByteOrder
	staticSize int
}

// WithPool takes the Buffer's static part from p instead of the Go heap.
// The Buffer must then be released with [Buffer.Free].
func WithPool(p *Pool) BufferOption { return func(c *bufferConfig) { c.pool = p } }

// WithOrder sets the byte order of the numbers on the wire:
// [binary.LittleEndian], [binary.BigEndian] or [binary.NativeEndian] (the
// default).
func WithOrder(o binary.ByteOrder) BufferOption { return func(c *bufferConfig) { c.order = o } }

// WithStaticSize reserves room for bytes of sections (the sum of their
// [SectionSize]s) so that writing them never grows the storage.
func WithStaticSize(bytes int) BufferOption { return func(c *bufferConfig) { c.staticSize = bytes } }

// NewWriter returns an empty Buffer in write mode. Invalid options return an
// error wrapping [ErrInvalid]; a pool that cannot supply memory, its error.
func NewWriter(opts ...BufferOption) (*Buffer, error) {
	c := bufferConfig{order: binary.NativeEndian}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.order == nil {
		return nil, fmt.Errorf("buffer: new writer: nil byte order: %w", ErrInvalid)
	}
	if c.staticSize < 0 || c.staticSize > MaxAlloc {
		return nil, fmt.Errorf("buffer: new writer: static size %d: %w", c.staticSize, ErrInvalid)
	}
	b := &Buffer{pool: c.pool, big: isBig(c.order)}
	b.swap = b.big != nativeBig
	if err := b.startWriting(HeaderSize + c.staticSize); err != nil {
		return nil, err
	}
	return b, nil
}

// startWriting makes b an empty writer with room for size bytes of header
// and static part, reusing its storage if it owns some.
func (b *Buffer) startWriting(size int) error {
	b.mode = modeWrite
	b.wire, b.static, b.dynamic, b.pos = nil, nil, nil, 0
	b.dec = nil
	b.dr.Reset(nil)
	b.dyn.Reset()
	b.enc = nil
	b.sections, b.values = 0, 0
	if b.store != nil {
		b.store = b.store[:0]
	}
	if err := b.reserve(size); err != nil {
		return err
	}
	b.store = b.store[:HeaderSize]
	return nil
}

// reserve makes room for n more bytes in store, moving it to a larger block
// (of the pool, or of the heap) if needed.
func (b *Buffer) reserve(n int) error {
	need := len(b.store) + n
	if b.store != nil && need <= cap(b.store) {
		return nil
	}
	if need > MaxAlloc {
		return fmt.Errorf("buffer: %d bytes: too large: %w", need, ErrInvalid)
	}
	size := max(need, min(2*cap(b.store), MaxAlloc), 256)
	var store []byte
	if b.pool != nil {
		var err error
		if store, err = b.pool.Get(size); err != nil {
			return err
		}
		store = store[:len(b.store)]
	} else {
		mem, _ := heapMem(roundUp(size, 8))
		store = mem[:len(b.store)]
	}
	copy(store, b.store)
	old, owned := b.store, b.owned
	b.store, b.owned = store, b.pool != nil
	if owned {
		return b.pool.Put(old)
	}
	return nil
}

// dropStore gives store back to the pool if it came from there.
func (b *Buffer) dropStore() error {
	store, owned := b.store, b.owned
	b.store, b.owned = nil, false
	if owned {
		return b.pool.Put(store)
	}
	return nil
}

// NewReader returns a Buffer in read mode over wire, the bytes of a
// committed Buffer (see [Buffer.Commit]); the byte order is the one the
// wire names. wire is not copied: it must not change while the Buffer reads
// it. Reads never go outside wire, whatever it holds: bytes that are not a
// well-formed Buffer make NewReader, or the read that meets them, fail with
// [ErrCorrupt].
func NewReader(wire []byte) (*Buffer, error) {
	b := &Buffer{}
	if err := b.startReading(wire); err != nil {
		return nil, err
	}
	return b, nil
}

// startReading parses wire's header and makes b read it from the start.
func (b *Buffer) startReading(wire []byte) error {
	if len(wire) < HeaderSize {
		return fmt.Errorf("buffer: %d bytes: shorter than a header: %w", len(wire), ErrCorrupt)
	}
	if [4]byte(wire[:4]) != wireMagic || wire[4] != wireVersion || wire[6] != 0 || wire[7] != 0 {
		return fmt.Errorf("buffer: bad magic or version % x: %w", wire[:8], ErrCorrupt)
	}
	var big bool
	switch wire[5] {
	case 'L':
	case 'B':
		big = true
	default:
		return fmt.Errorf("buffer: byte order %q: %w", wire[5], ErrCorrupt)
	}
	o := orderOf(big)
	staticLen, dynLen := o.Uint64(wire[8:]), o.Uint64(wire[16:])
	body := uint64(len(wire) - HeaderSize)
	if staticLen%8 != 0 || staticLen > body || dynLen != body-staticLen {
		return fmt.Errorf("buffer: header claims %d static + %d dynamic bytes, wire holds %d: %w",
			staticLen, dynLen, body, ErrCorrupt)
	}
	b.mode = modeRead
	b.big, b.swap = big, big != nativeBig
	b.wire = wire
	b.static = wire[HeaderSize : HeaderSize+int(staticLen)]
	b.dynamic = wire[HeaderSize+int(staticLen):]
	b.pos, b.sections, b.values = 0, 0, 0
	b.dec = nil
	return nil
}

// Commit ends writing: it completes the header, appends the dynamic part and
// returns the wire bytes, which stay valid until the Buffer is Freed or
// Reset. The Buffer is then in read mode, at its first section and value.
// Commit on a Buffer already reading fails with [ErrMode].
func (b *Buffer) Commit() ([]byte, error) {
	if err := b.writable("commit"); err != nil {
		return nil, err
	}
	staticLen := len(b.store) - HeaderSize
	if err := b.reserve(b.dyn.Len()); err != nil {
		return nil, err
	}
	b.store = append(b.store, b.dyn.Bytes()...)
	h := b.store[:HeaderSize]
	copy(h, wireMagic[:])
	h[4] = wireVersion
	h[5] = 'L'
	if b.big {
		h[5] = 'B'
	}
	h[6], h[7] = 0, 0
	o := orderOf(b.big)
	o.PutUint64(h[8:], uint64(staticLen))
	o.PutUint64(h[16:], uint64(b.dyn.Len()))
	b.dyn.Reset()
	b.enc = nil
	if err := b.startReading(b.store); err != nil {
		return nil, err // unreachable: the header was just written
	}
	return b.wire, nil
}

// Bytes returns the wire bytes of a Buffer in read mode (committed, or made
// by NewReader), or nil while it is writing or after Free.
func (b *Buffer) Bytes() []byte {
	if b.mode != modeRead {
		return nil
	}
	return b.wire
}

// Len returns the size in bytes of the wire the Buffer holds or would hold
// if committed now.
func (b *Buffer) Len() int {
	switch b.mode {
	case modeWrite:
		return max(len(b.store), HeaderSize) + b.dyn.Len()
	case modeRead:
		return len(b.wire)
	}
	return 0
}

// Sections returns the number of sections written so far, or read so far.
func (b *Buffer) Sections() int { return b.sections }

// Order returns the byte order of the Buffer's numbers.
func (b *Buffer) Order() binary.ByteOrder { return orderOf(b.big) }

// Reset empties the Buffer and puts it in write mode, keeping its byte
// order, pool and, if it owns some, its storage. Wire bytes it returned
// before are no longer valid.
func (b *Buffer) Reset() error {
	if b.mode == modeFreed {
		return fmt.Errorf("buffer: reset: %w", ErrFreed)
	}
	return b.startWriting(HeaderSize)
}

// Free releases the Buffer's storage to its pool, if it has one. After Free
// every method fails with [ErrFreed] (Bytes returns nil); a second Free
// fails with [ErrDoubleFree].
func (b *Buffer) Free() error {
	if b.mode == modeFreed {
		return fmt.Errorf("buffer: free: %w", ErrDoubleFree)
	}
	b.mode = modeFreed
	b.wire, b.static, b.dynamic = nil, nil, nil
	b.dec, b.enc = nil, nil
	b.dr.Reset(nil)
	b.dyn = bytes.Buffer{}
	b.scratch = nil
	return b.dropStore()
}

// writable checks that b is writing, and sets up a zero Buffer.
func (b *Buffer) writable(op string) error {
	switch b.mode {
	case modeWrite:
		if b.store == nil { // the zero Buffer: native order, heap storage
			b.big, b.swap = nativeBig, false
			return b.startWriting(HeaderSize)
		}
		return nil
	case modeFreed:
		return fmt.Errorf("buffer: %s: %w", op, ErrFreed)
	}
	return fmt.Errorf("buffer: %s: buffer is in read mode: %w", op, ErrMode)
}

// readable checks that b is reading.
func (b *Buffer) readable(op string) error {
	switch b.mode {
	case modeRead:
		return nil
	case modeFreed:
		return fmt.Errorf("buffer: %s: %w", op, ErrFreed)
	}
	return fmt.Errorf("buffer: %s: buffer is in write mode (Commit first): %w", op, ErrMode)
}
