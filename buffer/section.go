package buffer

import (
	"fmt"
	"unsafe"
)

// Write appends a section holding the elements of src to b, which must be
// writing. In the machine's byte order the elements are copied as memory;
// otherwise each is byte-reversed.
func Write[T Number](b *Buffer, src []T) error {
	k := KindOf[T]()
	p, err := b.beginSection("write", k, len(src))
	if err != nil {
		return err
	}
	copy(p, asBytes(src))
	if b.swap {
		swapUnits(p, k.unit())
	}
	return nil
}

// Read takes b's next section into dst, which must have the section's
// element type (by underlying type: a float64 section reads into a
// []Celsius) and exactly its count. b must be reading. A mismatch fails
// with [ErrSectionType] or [ErrSectionCount], naming both sides, and leaves
// b at the same section; past the last section Read fails with [ErrEnd].
func Read[T Number](b *Buffer, dst []T) error {
	k := KindOf[T]()
	p, next, err := b.nextSection("read", k, len(dst))
	if err != nil {
		return err
	}
	d := asBytes(dst)
	copy(d, p)
	if b.swap {
		swapUnits(d, k.unit())
	}
	b.consume(next)
	return nil
}

// Next reports the element kind and count of b's next section without
// taking it, so that a reader can size its slice. b must be reading; past
// the last section Next fails with [ErrEnd].
func (b *Buffer) Next() (Kind, int, error) {
	if err := b.readable("next"); err != nil {
		return 0, 0, err
	}
	k, count, _, err := b.peek()
	return k, count, err
}

// Skip passes over b's next section.
func (b *Buffer) Skip() error {
	if err := b.readable("skip"); err != nil {
		return err
	}
	_, _, next, err := b.peek()
	if err != nil {
		return err
	}
	b.consume(next)
	return nil
}

// beginSection appends the header of a section of count elements of kind k
// and returns its payload for the caller to fill (count*size bytes; the
// padding after it is already zero). On error b is unchanged.
func (b *Buffer) beginSection(op string, k Kind, count int) ([]byte, error) {
	if err := b.writable(op); err != nil {
		return nil, err
	}
	n := sectionSize(k, count)
	if n == 0 {
		return nil, fmt.Errorf("buffer: %s section %d: %d elements of %s: %w", op, b.sections, count, k, ErrInvalid)
	}
	if err := b.reserve(n); err != nil {
		return nil, fmt.Errorf("buffer: %s section %d: %w", op, b.sections, err)
	}
	off := len(b.store)
	b.store = b.store[:off+n]
	orderOf(b.big).PutUint64(b.store[off:], uint64(k)<<56|uint64(count))
	payload := b.store[off+SectionHeaderSize : off+SectionHeaderSize+count*k.Size()]
	clear(b.store[off+SectionHeaderSize+len(payload) : off+n])
	b.sections++
	return payload, nil
}

// peek parses the header of the next section: its kind, count and the
// offset of the section after it. It never reads outside b.static.
func (b *Buffer) peek() (k Kind, count, next int, err error) {
	rest := len(b.static) - b.pos
	if rest == 0 {
		return 0, 0, 0, fmt.Errorf("buffer: section %d: past the last section: %w", b.sections, ErrEnd)
	}
	if rest < SectionHeaderSize {
		return 0, 0, 0, fmt.Errorf("buffer: section %d: %d bytes left, a header needs %d: %w", b.sections, rest, SectionHeaderSize, ErrCorrupt)
	}
	word := orderOf(b.big).Uint64(b.static[b.pos:])
	k = Kind(word >> 56)
	c := word & MaxCount
	if !k.Valid() {
		return 0, 0, 0, fmt.Errorf("buffer: section %d: element kind %d: %w", b.sections, uint8(k), ErrCorrupt)
	}
	room := uint64(rest-SectionHeaderSize) / uint64(k.Size())
	if c > room {
		return 0, 0, 0, fmt.Errorf("buffer: section %d: %d %s in %d bytes: %w", b.sections, c, k, rest-SectionHeaderSize, ErrCorrupt)
	}
	count = int(c)
	size := SectionHeaderSize + roundUp(count*k.Size(), 8)
	if size > rest {
		return 0, 0, 0, fmt.Errorf("buffer: section %d: padding runs past the static part: %w", b.sections, ErrCorrupt)
	}
	return k, count, b.pos + size, nil
}

// nextSection checks that the next section holds count elements of kind k
// and returns its payload and the offset of the section after it, without
// taking it (see consume).
func (b *Buffer) nextSection(op string, k Kind, count int) ([]byte, int, error) {
	if err := b.readable(op); err != nil {
		return nil, 0, err
	}
	sk, sc, next, err := b.peek()
	if err != nil {
		return nil, 0, err
	}
	if sk != k {
		return nil, 0, fmt.Errorf("buffer: section %d holds %d %s, %s wants %d %s: %w", b.sections, sc, sk, op, count, k, ErrSectionType)
	}
	if sc != count {
		return nil, 0, fmt.Errorf("buffer: section %d holds %d %s, %s wants %d %s: %w", b.sections, sc, sk, op, count, k, ErrSectionCount)
	}
	start := b.pos + SectionHeaderSize
	return b.static[start : start+count*k.Size()], next, nil
}

// consume moves b past the section nextSection returned.
func (b *Buffer) consume(next int) {
	b.pos = next
	b.sections++
}

// elems returns payload p of kind k as elements of T, in the machine's byte
// order: p itself when it is aligned and already in that order, else a copy
// in b's scratch space, converted.
func elems[T Number](b *Buffer, p []byte, k Kind) []T {
	if !b.swap && aligned[T](p) {
		return asElems[T](p)
	}
	words := (len(p) + 7) / 8
	if cap(b.scratch) < words {
		b.scratch = make([]uint64, words)
	}
	s := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b.scratch[:words]))), len(p))
	copy(s, p)
	if b.swap {
		swapUnits(s, k.unit())
	}
	return asElems[T](s)
}
