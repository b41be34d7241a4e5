package buffer_test

import (
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo/buffer"
)

func TestBufViews(t *testing.T) {
	p := newPool(t)
	b, err := p.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 100 {
		t.Fatalf("Len %d", b.Len())
	}
	f, err := buffer.View[float64](b)
	if err != nil || len(f) != 12 {
		t.Fatalf("View[float64]: len %d, %v", len(f), err)
	}
	f[0] = 1.5
	raw, err := b.Bytes()
	if err != nil || len(raw) != 100 || unsafe.Pointer(&raw[0]) != unsafe.Pointer(&f[0]) {
		t.Fatalf("Bytes: len %d, %v, not the same memory", len(raw), err)
	}
	if _, err := buffer.View[float64](b); err != nil {
		t.Fatalf("second view of the same type: %v", err)
	}
	if _, err := buffer.View[Celsius](b); err != nil {
		t.Fatalf("view of a named type with the same kind: %v", err)
	}
	_, err = buffer.View[int32](b)
	if !errors.Is(err, buffer.ErrViewType) || err.Error() != "buffer: buf viewed as float64, view wants int32: buffer: buf viewed as another type" {
		t.Fatalf("view as another type: %v", err)
	}
	if err := b.Free(); !errors.Is(err, buffer.ErrInUse) {
		t.Fatalf("Free with views held: %v", err)
	}
	for range 3 {
		if err := b.Unview(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Unview(); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("Unview without a view: %v", err)
	}
	i, err := buffer.View[int32](b)
	if err != nil || len(i) != 25 {
		t.Fatalf("View[int32] after Unview: %d %v", len(i), err)
	}
	if i[0] == 0 && i[1] == 0 {
		t.Fatal("the int32 view does not see the float64 written before")
	}
	c, err := buffer.View[complex128](b)
	if !errors.Is(err, buffer.ErrViewType) || c != nil {
		t.Fatalf("View[complex128]: %v", err)
	}
	b.Unview()
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
}

func TestBufLifetime(t *testing.T) {
	p := newPool(t)
	b, _ := p.Alloc(64)
	if err := b.Done(); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("Done without Acquire: %v", err)
	}
	if err := b.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(); err != nil {
		t.Fatal(err)
	}
	if b.InFlight() != 2 {
		t.Fatalf("InFlight %d", b.InFlight())
	}
	if err := b.Free(); !errors.Is(err, buffer.ErrInUse) {
		t.Fatalf("Free in flight: %v", err)
	}
	if _, err := b.Handoff(); !errors.Is(err, buffer.ErrInUse) {
		t.Fatalf("Handoff in flight: %v", err)
	}
	b.Done()
	b.Done()
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); !errors.Is(err, buffer.ErrDoubleFree) {
		t.Fatalf("second Free: %v", err)
	}
	after := []struct {
		name string
		op   func() error
	}{
		{"Bytes", func() error { _, err := b.Bytes(); return err }},
		{"View", func() error { _, err := buffer.View[int8](b); return err }},
		{"Unview", b.Unview},
		{"Acquire", b.Acquire},
		{"Done", b.Done},
		{"Handoff", func() error { _, err := b.Handoff(); return err }},
	}
	for _, tt := range after {
		if err := tt.op(); !errors.Is(err, buffer.ErrFreed) {
			t.Errorf("%s after Free: %v, want ErrFreed", tt.name, err)
		}
	}
	if s := p.Stats(); s.InUse != 0 {
		t.Fatalf("%d bytes in use", s.InUse)
	}
	if _, err := p.Alloc(-1); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("Alloc(-1): %v", err)
	}
}

func TestBufHandoff(t *testing.T) {
	p := newPool(t)
	b, _ := p.Alloc(1 << 10)
	v, _ := buffer.View[uint16](b)
	for i := range v {
		v[i] = uint16(i)
	}
	if _, err := b.Handoff(); !errors.Is(err, buffer.ErrInUse) {
		t.Fatalf("Handoff with a view held: %v", err)
	}
	b.Unview()
	nb, err := b.Handoff()
	if err != nil {
		t.Fatal(err)
	}
	// The old handle is dead; the new one, owned by the receiver, sees the
	// same memory.
	if err := b.Free(); !errors.Is(err, buffer.ErrFreed) {
		t.Fatalf("Free of the old handle: %v", err)
	}
	if _, err := b.Bytes(); !errors.Is(err, buffer.ErrFreed) {
		t.Fatalf("Bytes of the old handle: %v", err)
	}
	ch := make(chan *buffer.Buf)
	done := make(chan error)
	go func() {
		r := <-ch
		w, err := buffer.View[uint16](r)
		if err == nil && (w[0] != 0 || w[511] != 511 || &w[0] != &v[0]) {
			err = errors.New("received memory differs")
		}
		r.Unview()
		if err == nil {
			err = r.Free()
		}
		done <- err
	}()
	ch <- nb
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.InUse != 0 {
		t.Fatalf("%d bytes in use", s.InUse)
	}
}

// TestBufConcurrent races Acquire/Done against Free: Free succeeds only
// once nothing is in flight, and after it every Acquire fails.
func TestBufConcurrent(t *testing.T) {
	p := newPool(t)
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	for range rounds {
		b, _ := p.Alloc(256)
		var wg sync.WaitGroup
		var mu sync.Mutex
		acquiredAfterFree := false
		freed := false
		for range 4 {
			wg.Go(func() {
				for range 50 {
					if b.Acquire() != nil {
						return
					}
					mu.Lock()
					if freed {
						acquiredAfterFree = true
					}
					mu.Unlock()
					if err := b.Done(); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		for {
			mu.Lock()
			err := b.Free()
			if err == nil {
				freed = true
			}
			mu.Unlock()
			if err == nil {
				break
			}
			if !errors.Is(err, buffer.ErrInUse) {
				t.Fatal(err)
			}
		}
		wg.Wait()
		if acquiredAfterFree {
			t.Fatal("Acquire succeeded after Free")
		}
	}
	if s := p.Stats(); s.InUse != 0 {
		t.Fatalf("%d bytes in use", s.InUse)
	}
}

func TestBufZeroValue(t *testing.T) {
	var b buffer.Buf
	if _, err := b.Bytes(); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("Bytes: %v", err)
	}
	if _, err := buffer.View[int64](&b); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("View: %v", err)
	}
	if err := b.Free(); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("Free: %v", err)
	}
	if _, err := b.Handoff(); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("Handoff: %v", err)
	}
	if err := b.Acquire(); !errors.Is(err, buffer.ErrInvalid) {
		t.Fatalf("Acquire: %v", err)
	}
}
