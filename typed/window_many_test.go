package typed_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// TestWindowManyCreateFree creates and frees 10,000 windows (1,000 with
// -short) in a loop, allocated and over slices alternately, each used
// once: the heap after the loop is no larger than after its first tenth,
// beyond a small allowance, so windows are unlimited in number.
func TestWindowManyCreateFree(t *testing.T) {
	windows := 10000
	if testing.Short() {
		windows = 1000
	}
	const ranks = 4
	var heap [2]uint64
	err := mpgo.Run(ranks, func(c *comm.Comm) error {
		for i := range windows {
			var w *typed.Window[int64]
			var err error
			if i%2 == 0 {
				w, _, err = typed.AllocWindow[int64](c, 16)
			} else {
				w, err = typed.NewWindow(c, make([]int64, 16))
			}
			if err != nil {
				return fmt.Errorf("window %d: %w", i, err)
			}
			if err := w.LockAll(); err != nil {
				return err
			}
			if _, err := w.FetchAndOp(1, (c.Rank()+1)%ranks, i%16, typed.Sum[int64]); err != nil {
				return err
			}
			if err := w.UnlockAll(); err != nil {
				return err
			}
			if err := w.Free(); err != nil {
				return fmt.Errorf("window %d: %w", i, err)
			}
			if i == windows/10 || i == windows-1 {
				if err := c.Barrier(); err != nil {
					return err
				}
				if c.Rank() == 0 {
					heap[min(1, i/(windows/2))] = liveHeap()
				}
				if err := c.Barrier(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const allowance = 512 << 10
	t.Logf("live heap after %d windows: %d B; after %d: %d B", windows/10, heap[0], windows, heap[1])
	if heap[1] > heap[0]+allowance {
		t.Fatalf("live heap grew from %d B after %d windows to %d B after %d", heap[0], windows/10, heap[1], windows)
	}
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
