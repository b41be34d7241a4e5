package comm_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/internal/memcopy"
)

// Large messages between goroutine ranks: their payloads are copied into
// the receive in pieces (comm/internal/memcopy) from 1 MiB to the cached
// limit, and there by two goroutines, the matching rank and a helper on
// the other core (comm/internal/engine/copyin.go); whole above it. These tests pin down that such a copy
// is still exactly one delivery: every byte, the right status, the sender
// free to reuse its buffer once its send completes, and a clean abort;
// under -race, that the helper's accesses are ordered before both
// completions.

// largeSizes straddle the sharing threshold (the runtime's non-temporal
// threshold too) and the cached limit, the others not a multiple of a
// piece.
var largeSizes = []int{512<<10 + 8, comm.ShareLimit - 8, comm.ShareLimit + 12344,
	3<<20 + 8, memcopy.CachedLimit, memcopy.CachedLimit + 8}

// floats returns n float64 values derived from seed.
func floats(n int, seed float64) []float64 {
	f := make([]float64, n)
	for i := range f {
		f[i] = seed + float64(i)*0.5
	}
	return f
}

func asBytes(f []float64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), len(f)*8)
}

// checkFloats reports the first element of got that is not want's.
func checkFloats(got, want []float64) error {
	for i := range want {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			return fmt.Errorf("element %d of %d: %v, want %v", i, len(want), got[i], want[i])
		}
	}
	return nil
}

// Every send mode, receiver first and sender first, blocking and not:
// the receive gets every byte, its status counts elements, and the sender
// overwrites its buffer as soon as its send completed (-race sees any
// late read of it).
func TestLargeMessageExact(t *testing.T) {
	modes := []string{"send", "ssend", "isend"}
	for _, procs := range []int{1, 2, 4} {
		for _, mode := range modes {
			for _, recvFirst := range []bool{true, false} {
				for _, size := range largeSizes {
					name := fmt.Sprintf("procs%d/%s/recvFirst=%v/%d", procs, mode, recvFirst, size)
					t.Run(name, func(t *testing.T) {
						if testing.Short() && procs != 2 {
							t.Skip("short")
						}
						defer setProcs(procs)()
						largeOnce(t, mode, recvFirst, size/8)
					})
				}
			}
		}
	}
}

func largeOnce(t *testing.T, mode string, recvFirst bool, n int) {
	run(t, 2, func(w *comm.Comm) error {
		const tag = 9
		if w.Rank() == 0 {
			send := floats(n, 1)
			if recvFirst {
				if err := w.Barrier(); err != nil {
					return err
				}
			}
			var err error
			switch mode {
			case "send":
				err = w.Send(asBytes(send), comm.Float64, 1, tag)
			case "ssend":
				err = w.Ssend(asBytes(send), comm.Float64, 1, tag)
			default:
				var r *comm.Request
				if r, err = w.Isend(asBytes(send), comm.Float64, 1, tag); err == nil {
					_, err = r.Wait()
				}
			}
			if err != nil {
				return err
			}
			for i := range send { // the sender's buffer is its own again
				send[i] = -1
			}
			return nil
		}
		recv := make([]float64, n+3)
		var st comm.Status
		var err error
		if recvFirst {
			r, err := w.Irecv(asBytes(recv), comm.Float64, 0, tag)
			if err != nil {
				return err
			}
			if err := w.Barrier(); err != nil {
				return err
			}
			if st, err = r.Wait(); err != nil {
				return err
			}
		} else {
			if _, err := w.Probe(0, tag); err != nil { // the send is queued
				return err
			}
			if st, err = w.Recv(asBytes(recv), comm.Float64, 0, tag); err != nil {
				return err
			}
		}
		if st.Source != 0 || st.Tag != tag || st.Count != n {
			return fmt.Errorf("status %+v, want source 0 tag %d count %d", st, tag, n)
		}
		if err := checkFloats(recv[:n], floats(n, 1)); err != nil {
			return err
		}
		return checkFloats(recv[n:], make([]float64, 3))
	}, noDetector())
}

// A window of large non-blocking sends against pre-posted receives (the
// osu_bw pattern), then the other way round: every message lands in its
// own receive, in order.
func TestLargeWindow(t *testing.T) {
	const window, n = 8, (1<<20 + 4000) / 8
	for _, recvFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("recvFirst=%v", recvFirst), func(t *testing.T) {
			run(t, 2, func(w *comm.Comm) error {
				reqs := make([]*comm.Request, window)
				bufs := make([][]float64, window)
				var err error
				if w.Rank() == 0 {
					if recvFirst {
						if err := w.Barrier(); err != nil {
							return err
						}
					}
					for i := range reqs {
						bufs[i] = floats(n, float64(i*1000))
						if reqs[i], err = w.Isend(asBytes(bufs[i]), comm.Float64, 1, 3); err != nil {
							return err
						}
					}
					if !recvFirst { // every send queued before the receives
						if err := w.Barrier(); err != nil {
							return err
						}
					}
					return comm.WaitAll(reqs...)
				}
				if !recvFirst {
					if err := w.Barrier(); err != nil {
						return err
					}
				}
				for i := range reqs {
					bufs[i] = make([]float64, n)
					if reqs[i], err = w.Irecv(asBytes(bufs[i]), comm.Float64, 0, 3); err != nil {
						return err
					}
				}
				if recvFirst {
					if err := w.Barrier(); err != nil {
						return err
					}
				}
				if err := comm.WaitAll(reqs...); err != nil {
					return err
				}
				for i := range bufs {
					if err := checkFloats(bufs[i], floats(n, float64(i*1000))); err != nil {
						return fmt.Errorf("message %d: %w", i, err)
					}
				}
				return nil
			}, noDetector())
		})
	}
}

// A large receive cancelled after it matched still delivers; one
// cancelled before any send is cancelled and the next receive gets the
// message.
func TestLargeCancel(t *testing.T) {
	n := (1<<20 + 8) / 8
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if err := w.Barrier(); err != nil {
				return err
			}
			for i := range 2 {
				if err := w.Send(asBytes(floats(n, float64(i))), comm.Float64, 1, 0); err != nil {
					return err
				}
			}
			return nil
		}
		recv := make([]float64, n)
		early, err := w.Irecv(asBytes(recv), comm.Float64, 0, 0)
		if err != nil {
			return err
		}
		if err := early.Cancel(); err != nil {
			return err
		}
		if _, err := early.Wait(); !errors.Is(err, comm.ErrCanceled) {
			return fmt.Errorf("cancelled receive: %v, want ErrCanceled", err)
		}
		r, err := w.Irecv(asBytes(recv), comm.Float64, 0, 0)
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		<-r.Done()
		if err := r.Cancel(); err != nil {
			return err
		}
		if st, err := r.Wait(); err != nil || st.Count != n {
			return fmt.Errorf("late cancel: %+v %v", st, err)
		}
		if err := checkFloats(recv, floats(n, 0)); err != nil {
			return err
		}
		if _, err := w.Recv(asBytes(recv), comm.Float64, 0, 0); err != nil {
			return err
		}
		return checkFloats(recv, floats(n, 1))
	})
}

// A rank that fails while two others stream large messages: every
// operation either delivered its message exactly or failed with
// ErrAborted, Run names the failing rank, and no goroutine is left behind
// (goleak in TestMain).
func TestLargeAbortDuringCopies(t *testing.T) {
	n := (2<<20 + 8) / 8
	boom := errors.New("boom")
	got := make(chan error, 4)
	err := mpgo.Run(3, func(w *comm.Comm) error {
		switch w.Rank() {
		case 2:
			if _, err := w.Recv(make([]byte, 1), comm.Byte, 1, 7); err != nil {
				return err
			}
			return boom
		case 0:
			send := floats(n, 5)
			for {
				if err := w.Send(asBytes(send), comm.Float64, 1, 0); err != nil {
					got <- err
					return err
				}
			}
		default:
			recv := make([]float64, n)
			for i := 0; ; i++ {
				if i == 3 {
					if err := w.Send([]byte{1}, comm.Byte, 2, 7); err != nil {
						got <- err
						return err
					}
				}
				if _, err := w.Recv(asBytes(recv), comm.Float64, 0, 0); err != nil {
					got <- err
					return err
				}
				if err := checkFloats(recv, floats(n, 5)); err != nil {
					return err
				}
			}
		}
	}, noDetector())
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want boom", err)
	}
	allAborted(t, got, "a large send or receive")
}
