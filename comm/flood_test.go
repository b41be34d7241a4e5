package comm_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Issue 23, item 8: a sender that floods a receiver with small messages
// that no receive matches yet must not grow the receiver's memory without
// bound (it took 1.36 GB for 300k messages of 4 KiB). 256 MiB of 4 KiB
// Sends, four times the default eager buffer of a pair: the flood stalls
// once the buffer is full, the heap grows by about the buffer, and once
// the receiver starts it gets every message, in order.
func TestEagerFloodBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 256 MiB")
	}
	const size, n = 4 << 10, 64 << 10
	var sent atomic.Int64
	var growth uint64
	var stalled int64 // sends returned when the heap was measured
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			buf := make([]byte, size)
			for i := 0; i < n; i++ {
				copy(buf, payload(8, uint64(i)))
				if err := w.Send(buf, comm.Byte, 1, 5); err != nil {
					return err
				}
				sent.Add(1)
			}
			return nil
		}
		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		waitStalled(&sent, n)
		stalled = sent.Load()
		runtime.GC()
		runtime.ReadMemStats(&during)
		growth = during.HeapInuse - min(during.HeapInuse, before.HeapInuse)
		buf := make([]byte, size)
		for i := 0; i < n; i++ {
			if _, err := w.Recv(buf, comm.Byte, 0, 5); err != nil {
				return err
			}
			if got := val(buf); got != uint64(i) {
				return fmt.Errorf("message %d: got %d", i, got)
			}
		}
		return nil
	})
	t.Logf("heap grew by %d MiB while %d of %d sends had returned", growth>>20, stalled, n)
	if limit := uint64(96 << 20); growth > limit {
		t.Errorf("the unreceived flood took %d MiB of heap, want at most %d (the default eager buffer is 64 MiB)", growth>>20, limit>>20)
	}
}

// waitStalled waits until count stops moving for three looks in a row
// (or reaches n): a flooding sender blocked, or done.
func waitStalled(count *atomic.Int64, n int64) {
	last, still := int64(-1), 0
	for still < 3 {
		time.Sleep(20 * time.Millisecond)
		c := count.Load()
		if c == n {
			return
		}
		if c == last {
			still++
		} else {
			last, still = c, 0
		}
	}
}

// With a small eager buffer (64 KiB) and two senders, one flooding with
// Send and one with Isend (messages of 0 bytes to 48 KiB, with Ssends
// among them): the first stalls once its pair's buffer is full and the
// buffer never holds more than the bound; the second's Isends all return
// at once, those beyond the bound left incomplete; and once the receiver
// starts, each sender's messages arrive complete and in order, eager
// copies and rendezvous alike.
func TestEagerFloodOrder(t *testing.T) {
	const bound = 64 << 10
	n := 400
	if testing.Short() {
		n = 100
	}
	sizes := []int{8, 4 << 10, 0, 48 << 10, 100, 1 << 10}
	size := func(i int) int { return sizes[i%len(sizes)] }
	var sent [3]atomic.Int64
	isent := make(chan int, 1) // rank 2: its Isends returned, this many incomplete
	run(t, 3, func(w *comm.Comm) error {
		switch w.Rank() {
		case 0:
			for i := 0; i < n; i++ {
				var err error
				if i%50 == 49 {
					err = w.Ssend(payload(size(i), uint64(i)), comm.Byte, 1, i%3)
				} else {
					err = w.Send(payload(size(i), uint64(i)), comm.Byte, 1, i%3)
				}
				if err != nil {
					return err
				}
				sent[0].Add(1)
			}
			return nil
		case 2:
			reqs := make([]*comm.Request, n)
			for i := range reqs {
				var err error
				if reqs[i], err = w.Isend(payload(size(i), uint64(i)), comm.Byte, 1, i%3); err != nil {
					return err
				}
			}
			waiting := 0
			for _, r := range reqs {
				if _, done, _ := r.Test(); !done {
					waiting++
				}
			}
			isent <- waiting
			return comm.WaitAll(reqs...)
		}
		var waiting int
		select {
		case waiting = <-isent:
		case <-time.After(time.Minute):
			return errors.New("the Isends did not return: Isend blocked")
		}
		if waiting == 0 {
			return errors.New("every Isend completed with nothing received: the eager buffer is not bounded")
		}
		waitStalled(&sent[0], int64(n))
		if got := sent[0].Load(); got == int64(n) {
			return fmt.Errorf("all %d Sends returned with nothing received: the eager buffer is not bounded", n)
		}
		for _, src := range []int{0, 2} {
			if b := comm.Buffered(w, src); b > bound {
				return fmt.Errorf("%d bytes buffered from rank %d, bound %d", b, src, bound)
			}
		}
		buf := make([]byte, 48<<10)
		next := [3]uint64{}
		for k := 0; k < 2*n; k++ {
			st, err := w.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			i := next[st.Source]
			next[st.Source]++
			if want := size(int(i)); st.Count != max(want, 8) || st.Tag != int(i)%3 || val(buf) != i {
				return fmt.Errorf("from rank %d message %d: %d bytes tag %d value %d", st.Source, i, st.Count, st.Tag, val(buf))
			}
		}
		for _, src := range []int{0, 2} {
			if b := comm.Buffered(w, src); b != 0 {
				return fmt.Errorf("%d bytes still counted from rank %d with every message received", b, src)
			}
		}
		return nil
	}, mpgo.WithEagerBuffer(bound))
}
