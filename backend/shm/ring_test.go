package shm

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
)

// A producer and a consumer on two goroutines pass records of random
// sizes through a small ring: every record arrives once, in order, intact,
// across many wraps (pads) and full rings; a third of them are small
// enough to travel in their header cell, and do.
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
			h := header{kind: kindEager, id: uint64(i), tag: int64(-i), src: int64(i % 7), context: uint64(i) << 40, len: uint64(len(p))}
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
		if h.kind != kindEager || !inline && h.id != uint64(i) || h.tag != int64(-i) || h.src != int64(i%7) || h.context != uint64(i)<<40 || !bytes.Equal(p, payload(i)) {
			t.Fatalf("record %d: got %+v, %d bytes", i, h, len(p))
		}
		if inline != (len(p) <= inlineMax) {
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
		r.head.Store(cell)
		var got header
		if _, _, err := r.peek(&got); err == nil {
			t.Errorf("%+v: no error", h)
		}
	}
}
