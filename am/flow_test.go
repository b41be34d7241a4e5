package am_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
)

// A slow handler makes its sender wait: the requests a rank has sent that
// their destination has not started never exceed the window, and the
// sender does get that far ahead (it is the window that holds it back).
func TestFlowControl(t *testing.T) {
	const win, k = 4, 200
	var posted, started, ahead atomic.Int64
	run(t, 2, func(w *comm.Comm) error {
		ep, err := am.New(w, am.WithWindow(win))
		if err != nil {
			return err
		}
		slow, err := am.Register(ep, "slow", func(from, i int) (struct{}, error) {
			s := started.Add(1)
			if a := posted.Load() - s; a > ahead.Load() {
				ahead.Store(a)
			}
			time.Sleep(20 * time.Microsecond)
			return struct{}{}, nil
		})
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil { // requests held for a name not yet registered are outside the window
			return err
		}
		if w.Rank() == 1 {
			for i := range k {
				if err := slow.Post(0, i); err != nil {
					return err
				}
				posted.Add(1)
			}
		}
		return ep.Close()
	})
	if a := ahead.Load(); a > win || a < win/2 {
		t.Errorf("the sender was up to %d requests ahead of the handler, want %d (the window)", a, win)
	}
	if started.Load() != k {
		t.Errorf("%d requests handled, want %d", started.Load(), k)
	}
}

// 64 ranks on the machine's cores (2 in CI): every rank calls handlers
// that call others, and posts cascades, and Quiesce and Close end it.
func TestManyRanks(t *testing.T) {
	n, calls := 64, 16
	if testing.Short() {
		calls = 4
	}
	t.Logf("%d ranks on GOMAXPROCS=%d", n, runtime.GOMAXPROCS(0))
	var hops atomic.Int64
	run(t, n, func(w *comm.Comm) error {
		ep, err := am.New(w, am.WithWindow(8))
		if err != nil {
			return err
		}
		var hop *am.Handler[int, struct{}]
		hop, err = am.Register(ep, "hop", func(from, left int) (struct{}, error) {
			hops.Add(1)
			if left > 0 {
				return struct{}{}, hop.Post((ep.Rank()+7)%n, left-1)
			}
			return struct{}{}, nil
		})
		if err != nil {
			return err
		}
		square, err := am.Register(ep, "square", func(from, x int) (int, error) { return x * x, nil })
		if err != nil {
			return err
		}
		sumsq, err := am.Register(ep, "sumsq", func(from, x int) (int, error) {
			a, err1 := square.Call((ep.Rank()+1)%n, x).Wait()
			b, err2 := square.Call(from, x+1).Wait()
			return a + b, errors.Join(err1, err2)
		})
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil { // hop is set everywhere
			return err
		}
		rng := rand.New(rand.NewPCG(uint64(w.Rank()), 1))
		if err := hop.Post(rng.IntN(n), 10); err != nil {
			return err
		}
		fs := make([]*am.Future[int], calls)
		for i := range fs {
			fs[i] = sumsq.Call(rng.IntN(n), i)
		}
		for i, f := range fs {
			v, err := f.Wait()
			if err != nil {
				return err
			}
			if want := i*i + (i+1)*(i+1); v != want {
				return fmt.Errorf("sumsq(%d) = %d, want %d", i, v, want)
			}
		}
		if err := ep.Quiesce(); err != nil {
			return err
		}
		if got := hops.Load(); got != int64(11*n) {
			return fmt.Errorf("%d hops by Quiesce's return, want %d", got, 11*n)
		}
		return ep.Close()
	})
}

// Quiesce and Close inside a handler fail with ErrInHandler, Post and Call
// there work.
func TestInHandler(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		h, err := am.Register(ep, "h", func(from, x int) (int, error) {
			if err := ep.Quiesce(); !errors.Is(err, am.ErrInHandler) {
				return 0, fmt.Errorf("Quiesce in a handler: %v", err)
			}
			if err := ep.Close(); !errors.Is(err, am.ErrInHandler) {
				return 0, fmt.Errorf("Close in a handler: %v", err)
			}
			return x, nil
		})
		if err != nil {
			return err
		}
		if _, err := h.Call(1-w.Rank(), 1).Wait(); err != nil {
			return err
		}
		return ep.Close()
	})
}
