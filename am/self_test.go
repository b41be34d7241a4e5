package am

import (
	"testing"
)

// A goroutine reads back the mark it runs beneath, however deep it has
// called meanwhile; an unmarked one finds none, and so does a goroutine
// started beneath a mark.
func TestStackMark(t *testing.T) {
	if !markable {
		t.Fatal("the mark's frames were not found")
	}
	if v, ok := stackMark(); ok {
		t.Fatalf("an unmarked goroutine found mark %#x", v)
	}
	for _, depth := range []int{0, 1, 31, 32, 200} {
		for _, v := range []uint64{0, 1, 0x10, 0xabc, 1<<64 - 1} {
			var got uint64
			var ok bool
			runMarked(v, func() { deep(depth, func() { got, ok = stackMark() }) })
			if !ok || got != v {
				t.Errorf("depth %d: mark %#x, %v; want %#x", depth, got, ok, v)
			}
		}
	}
	done := make(chan bool)
	runMarked(7, func() {
		go func() { _, ok := stackMark(); done <- ok }()
	})
	if <-done {
		t.Error("a goroutine started beneath a mark found it")
	}
}

//go:noinline
func deep(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	deep(n-1, f)
}

func BenchmarkStackMark(b *testing.B) {
	b.Run("unmarked", func(b *testing.B) {
		for b.Loop() {
			stackMark()
		}
	})
	b.Run("marked/depth=10", func(b *testing.B) {
		runMarked(0x123, func() {
			deep(10, func() {
				for b.Loop() {
					stackMark()
				}
			})
		})
	})
}
