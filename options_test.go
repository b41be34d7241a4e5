package mpgo_test

import (
	"errors"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// WithEagerBuffer and MPGO_EAGER_BUFFER set the eager buffer of a pair of
// goroutine ranks, the option first; a bound that is not a positive
// number is an argument error.
func TestEagerBufferSettings(t *testing.T) {
	for _, c := range []struct {
		name string
		env  string
		opt  mpgo.Option
		want int // messages of 4 KiB that fit: 4096+256 bytes each
	}{
		{"option", "", mpgo.WithEagerBuffer(10 * 4352), 10},
		{"env", "43520", nil, 10},
		{"option over env", "8704", mpgo.WithEagerBuffer(5 * 4352), 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("MPGO_EAGER_BUFFER", c.env)
			if got := eagerFit(t, c.opt); got != c.want {
				t.Errorf("%d messages buffered, want %d", got, c.want)
			}
		})
	}
	for _, env := range []string{"0", "-5", "64MiB"} {
		t.Setenv("MPGO_EAGER_BUFFER", env)
		if err := mpgo.Run(1, func(*comm.Comm) error { return nil }); !errors.Is(err, comm.ErrArg) {
			t.Errorf("MPGO_EAGER_BUFFER=%s: %v, want ErrArg", env, err)
		}
	}
	t.Setenv("MPGO_EAGER_BUFFER", "")
	for _, b := range []int{0, -1} {
		if err := mpgo.Run(1, func(*comm.Comm) error { return nil }, mpgo.WithEagerBuffer(b)); !errors.Is(err, comm.ErrArg) {
			t.Errorf("WithEagerBuffer(%d): %v, want ErrArg", b, err)
		}
	}
}

// eagerFit counts how many Isends of 4 KiB complete before their
// receives are posted, with opt.
func eagerFit(t *testing.T, opt mpgo.Option) int {
	t.Helper()
	const n = 20
	fit := 0
	err := mpgo.Run(2, func(w *comm.Comm) error {
		buf := make([]byte, 4096)
		if w.Rank() == 0 {
			reqs := make([]*comm.Request, n)
			for i := range reqs {
				var err error
				if reqs[i], err = w.Isend(buf, comm.Byte, 1, 0); err != nil {
					return err
				}
			}
			for _, r := range reqs {
				if _, done, _ := r.Test(); done {
					fit++
				}
			}
			if err := w.Send(nil, comm.Byte, 1, 1); err != nil { // go
				return err
			}
			return comm.WaitAll(reqs...)
		}
		if _, err := w.Recv(nil, comm.Byte, 0, 1); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if _, err := w.Recv(buf, comm.Byte, 0, 0); err != nil {
				return err
			}
		}
		return nil
	}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return fit
}
