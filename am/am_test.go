package am_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
)

// run runs fn on n goroutine ranks and fails the test on error.
func run(t testing.TB, n int, fn func(w *comm.Comm) error, opts ...mpgo.Option) {
	t.Helper()
	if err := mpgo.Run(n, fn, opts...); err != nil {
		t.Fatal(err)
	}
}

// Calls and Posts between every pair of ranks, the rank's own included:
// responses come back, Posts run, Quiesce waits for them all.
func TestCallAndPost(t *testing.T) {
	const n = 4
	run(t, n, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		var got atomic.Int64
		add, err := am.Register(ep, "add", func(from int, x int64) (int64, error) {
			got.Add(x)
			return x + int64(ep.Rank()), nil
		})
		if err != nil {
			return err
		}
		for dst := range n {
			if err := add.Post(dst, 100); err != nil {
				return err
			}
		}
		futs := make([]*am.Future[int64], n)
		for dst := range n {
			futs[dst] = add.Call(dst, int64(w.Rank()))
		}
		for dst, f := range futs {
			v, err := f.Wait()
			if err != nil {
				return err
			}
			if want := int64(w.Rank() + dst); v != want {
				return fmt.Errorf("Call to rank %d: %d, want %d", dst, v, want)
			}
		}
		if err := ep.Quiesce(); err != nil {
			return err
		}
		if want := int64(n*100 + n*(n-1)/2); got.Load() != want {
			return fmt.Errorf("handled %d, want %d", got.Load(), want)
		}
		return ep.Close()
	})
}

// Each sender's requests start in the order it sent them.
func TestOrderPerSender(t *testing.T) {
	const k = 300
	onJobs(t, func(w *comm.Comm) error {
		n := w.Size()
		ep, err := am.New(w, am.WithWindow(8))
		if err != nil {
			return err
		}
		next := make([]int, n)
		var bad error
		seq, err := am.Register(ep, "seq", func(from int, i int) (struct{}, error) {
			if i != next[from] && bad == nil {
				bad = fmt.Errorf("rank %d: request %d from rank %d, want %d", ep.Rank(), i, from, next[from])
			}
			next[from] = i + 1
			return struct{}{}, nil
		})
		if err != nil {
			return err
		}
		for i := range k {
			for dst := range n {
				if i%3 == 0 {
					if _, err := seq.Call(dst, i).Wait(); err != nil {
						return err
					}
				} else if err := seq.Post(dst, i); err != nil {
					return err
				}
			}
		}
		if err := ep.Close(); err != nil {
			return err
		}
		return bad
	})
}

// A handler's error and panic come back to the caller with their
// messages; a Post's error comes back to the poster's Quiesce; the
// dispatcher carries on after a panic.
func TestHandlerErrors(t *testing.T) {
	onJobs(t, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		fail, err := am.Register(ep, "fail", func(from int, msg string) (int, error) {
			if msg == "panic" {
				panic("handler blew up")
			}
			if msg != "" {
				return 0, errors.New(msg)
			}
			return 7, nil
		})
		if err != nil {
			return err
		}
		other := (w.Rank() + 1) % w.Size()
		_, err = fail.Call(other, "no such key").Wait()
		var he *am.HandlerError
		if !errors.Is(err, am.ErrRemote) || errors.Is(err, am.ErrPanic) || !errors.As(err, &he) ||
			he.Msg != "no such key" || he.Rank != other || he.Handler != "fail" {
			return fmt.Errorf("handler error: %v", err)
		}
		_, err = fail.Call(other, "panic").Wait()
		if !errors.Is(err, am.ErrPanic) || !errors.Is(err, am.ErrRemote) || !strings.Contains(err.Error(), "handler blew up") {
			return fmt.Errorf("handler panic: %v", err)
		}
		if v, err := fail.Call(other, "").Wait(); v != 7 || err != nil {
			return fmt.Errorf("after a panic: %d, %v", v, err)
		}
		if err := fail.Post(other, "posted"); err != nil {
			return err
		}
		if err := fail.Post(other, ""); err != nil {
			return err
		}
		err = ep.Quiesce()
		if !errors.Is(err, am.ErrRemote) || !strings.Contains(err.Error(), "posted") {
			return fmt.Errorf("Quiesce after a failed Post: %v", err)
		}
		if err := ep.Quiesce(); err != nil {
			return fmt.Errorf("second Quiesce: %v", err)
		}
		return ep.Close()
	})
}

// Bad arguments, and use after Close, fail with comm's sentinels; a name
// registered twice fails.
func TestArguments(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if _, err := am.New(nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("New(nil): %v", err)
		}
		if _, err := am.New(w, am.WithWindow(0)); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("WithWindow(0): %v", err)
		}
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		id := func(from int, x int) (int, error) { return x, nil }
		h, err := am.Register(ep, "id", id)
		if err != nil {
			return err
		}
		if _, err := am.Register(ep, "id", id); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("registered twice: %v", err)
		}
		if _, err := am.Register(ep, "", id); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("empty name: %v", err)
		}
		if _, err := am.Register[int, int](ep, "nil", nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("nil func: %v", err)
		}
		if err := h.Post(2, 1); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("Post to rank 2 of 2: %v", err)
		}
		if _, err := h.Call(-1, 1).Wait(); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("Call to rank -1: %v", err)
		}
		select {
		case <-h.Call(5, 1).Done():
		default:
			return fmt.Errorf("a failed Call's Done is not closed")
		}
		if err := ep.Close(); err != nil {
			return err
		}
		if err := h.Post(0, 1); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("Post after Close: %v", err)
		}
		if _, err := h.Call(0, 1).Wait(); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("Call after Close: %v", err)
		}
		if err := ep.Close(); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("second Close: %v", err)
		}
		if err := ep.Quiesce(); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("Quiesce after Close: %v", err)
		}
		return nil
	})
}
