package shm

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
)

// A producer and a consumer on two goroutines pass records of random
// sizes through a small ring: every record arrives once, in order, intact,
// across many wraps (pads) and full rings; a third of them are small
// enough to travel in their header cell, and do, unless their tag does
// not fit the inline header's 32 bits.
func TestRingOrder(t *testing.T) {
	const size, n = 4096, 5000
	mem := make([]byte, ringHeader+size)
	prod, cons := newRing(mem), newRing(mem)
	payload := func(i int) []byte {
		n := (i * 37) % (maxRecord(size) - cell + 1)
		if i%3 == 0 {
			n = i % (inlineMax + 1)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i + j)
		}
		return b
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			p := payload(i)
			h := header{kind: kindEager, id: uint64(i), tag: tagOf(i), src: int64(i % 7), context: uint64(i) << 40, len: uint64(len(p))}
			for !prod.tryPut(&h, p) {
				runtime.Gosched() // full: the consumer drains
			}
		}
	}()
	var h header
	for i := 0; i < n; {
		p, ok, err := cons.peek(&h)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			runtime.Gosched()
			continue
		}
		inline := h.flags&flagInline != 0
		if h.kind != kindEager || !inline && h.id != uint64(i) || h.tag != tagOf(i) || h.src != int64(i%7) || h.context != uint64(i)<<40 || !bytes.Equal(p, payload(i)) {
			t.Fatalf("record %d: got %+v, %d bytes", i, h, len(p))
		}
		if inline != (len(p) <= inlineMax && i%11 != 0) {
			t.Fatalf("record %d of %d bytes: inline %v", i, len(p), inline)
		}
		cons.next(&h)
		i++
	}
	wg.Wait()
	if !cons.empty() {
		t.Error("ring not empty after the last record")
	}
}

// tagOf is TestRingOrder's tag of record i: beyond 32 bits for every
// eleventh.
func tagOf(i int) int64 {
	if i%11 == 0 {
		return 1<<40 + int64(i)
	}
	return int64(i)
}

// A payload cell may hold, where a header holds its stamp, the very stamp
// that a later record's header at that cell will carry: the consumer must
// not take it for a record. Every record's payload here is poisoned so,
// for the next lap, in sizes that put later headers on former payload
// cells; every record still arrives once, in order, intact, and an empty
// ring reads as empty.
func TestRingStampsCleared(t *testing.T) {
	const size, n = 2048, 3000
	mem := make([]byte, ringHeader+size)
	prod, cons := newRing(mem), newRing(mem)
	payload := func(i int, start uint64) []byte {
		b := make([]byte, cell*(1+i%5)+i%3)
		for j := range b {
			b[j] = byte(i ^ j)
		}
		for c := 0; c+stampAt+8 <= len(b); c += cell {
			next := start + cell + uint64(c) + size + 1 // the stamp a header there expects a lap later
			binary.NativeEndian.PutUint64(b[c+stampAt:], next)
		}
		return b
	}
	want := make([][]byte, n)
	var h header
	for i := 0; i < n; {
		// Produce as long as there is room, then drain: the producer
		// always writes behind cells the consumer cleared.
		for ; i < n; i++ {
			start := prod.mine
			span := uint64(cell + cells(len(payload(i, 0))))
			if pos := start % size; pos+span > size {
				start += size - pos
			}
			want[i] = payload(i, start)
			ph := header{kind: kindEager, tag: int64(i), len: uint64(len(want[i]))}
			if !prod.tryPut(&ph, want[i]) {
				break
			}
		}
		for {
			p, ok, err := cons.peek(&h)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			k := int(h.tag)
			if !bytes.Equal(p, want[k]) {
				t.Fatalf("record %d: payload differs", k)
			}
			cons.next(&h)
		}
		if !cons.empty() {
			t.Fatal("ring not empty after draining")
		}
	}
}

// A record that a producer could not have written (an unknown kind, a
// length beyond the ring) is an error, never a read out of bounds.
func TestRingMalformed(t *testing.T) {
	for _, h := range []header{{kind: 0}, {kind: kindLast + 1}, {kind: kindEager, len: 1 << 40},
		{kind: kindEager, flags: flagInline, len: inlineMax + 1}, {kind: kindRTS, flags: flagInline}} {
		mem := make([]byte, ringHeader+4096)
		r := newRing(mem)
		if h.flags&flagInline != 0 {
			h.putInline(r.data[:cell], make([]byte, h.len))
		} else {
			h.put(r.data[:cell])
		}
		r.stamp(0).Store(1)
		r.head.Store(cell)
		var got header
		if _, _, err := r.peek(&got); err == nil {
			t.Errorf("%+v: no error", h)
		}
	}
}
