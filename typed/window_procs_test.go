package typed_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
	"github.com/mpgo/mpgo/typed"
)

// Windows across processes: each process of a job is played by a world of
// this process, joined to the others by a device (the conformance suite's
// in-memory loopback, or the TCP backend on the loopback interface), so
// that every operation to a rank of another process goes through the
// window's active-message handlers. The rank functions are the goroutine
// tests' own, checked against the same sequential references.

// windowJob runs fn on every rank of a job: each rank's error.
type windowJob func(t *testing.T, fn func(c *comm.Comm) error) []error

// windowJobs are the jobs the window tests across processes run on.
var windowJobs = []struct {
	name string
	run  windowJob
}{
	{"loopback/2x2", func(t *testing.T, fn func(c *comm.Comm) error) []error {
		layout := devicetest.Blocks(2, 2)
		devs, _ := devicetest.Loopbacks(2, layout, comm.DefaultEagerLimit)
		errs, err := devicetest.Run(devs, layout, 0, fn)
		if err != nil {
			t.Fatal(err)
		}
		return errs
	}},
	{"tcp/4x1", overTCPJob(4, 1)},
	{"tcp/2x3", overTCPJob(2, 3)},
}

// overTCPJob runs procs processes of k ranks joined by the TCP backend.
func overTCPJob(procs, k int) windowJob {
	return func(t *testing.T, fn func(c *comm.Comm) error) []error {
		open := func(kv device.KV, l device.Layout) (device.Device, error) {
			return tcp.Open(kv, tcp.Config{Layout: l, Getenv: func(string) string { return "" }})
		}
		return jobtest.Run(t, jobtest.Join(t, procs, job.Config{RanksPerProcess: k}, open), fn)
	}
}

// onWindowJobs runs fn on every job of windowJobs, as subtests.
func onWindowJobs(t *testing.T, fn func(c *comm.Comm) error) {
	t.Helper()
	for _, j := range windowJobs {
		t.Run(j.name, func(t *testing.T) {
			for r, err := range j.run(t, fn) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

func TestWindowProcsFencePutGet(t *testing.T) {
	onWindowJobs(t, fencePutGet(makers[0].make))
	onWindowJobs(t, fencePutGet(makers[1].make))
}

func TestWindowProcsAccumulateReference(t *testing.T) { onWindowJobs(t, accumulateReference) }

func TestWindowProcsConcurrentAccumulate(t *testing.T) {
	onWindowJobs(t, sumBody(int64(1), typed.Sum[int64], func(v int64) int { return int(v) }))
	onWindowJobs(t, sumBody(1.0, typed.Sum[float64], func(v float64) int { return int(v) }))
	onWindowJobs(t, sumBody(uint16(1), typed.Sum[uint16], func(v uint16) int { return int(v) }))
	onWindowJobs(t, sumBody(complex(1, 0), typed.Sum[complex128], func(v complex128) int { return int(real(v)) }))
}

func TestWindowProcsCounter(t *testing.T)             { onWindowJobs(t, counterBody(300)) }
func TestWindowProcsCompareAndSwapMutex(t *testing.T) { onWindowJobs(t, casMutex) }
func TestWindowProcsPassiveTargetBusy(t *testing.T)   { onWindowJobs(t, passiveBusy) }
func TestWindowProcsPSCW(t *testing.T)                { onWindowJobs(t, pscwRing) }

// TestWindowProcsErrors: what cannot work across processes fails on every
// rank with ErrNotSupported, and the epoch rules are checked as between
// goroutines.
func TestWindowProcsErrors(t *testing.T) {
	onWindowJobs(t, func(c *comm.Comm) error {
		if _, _, err := typed.AllocSharedWindow[int64](c, 4); !errors.Is(err, comm.ErrNotSupported) {
			return fmt.Errorf("shared window across processes: %v, want ErrNotSupported", err)
		}
		w, _, err := typed.AllocWindow[pair](c, 4)
		if err != nil {
			return err
		}
		if err := w.Put([]pair{{1, 1}}, 0, 0); !errors.Is(err, comm.ErrEpoch) {
			return fmt.Errorf("Put outside an epoch: %v, want ErrEpoch", err)
		}
		if err := w.Unlock(0); !errors.Is(err, comm.ErrEpoch) {
			return fmt.Errorf("Unlock without Lock: %v, want ErrEpoch", err)
		}
		if _, err := w.SharedQuery(0); !errors.Is(err, comm.ErrNotSupported) {
			return fmt.Errorf("SharedQuery across processes: %v, want ErrNotSupported", err)
		}
		if err := w.LockAll(); err != nil {
			return err
		}
		last := c.Size() - 1
		if err := w.Accumulate([]pair{{1, 1}}, last, 0, addPair); !errors.Is(err, comm.ErrNotSupported) {
			return fmt.Errorf("a user op across processes: %v, want ErrNotSupported", err)
		}
		if err := w.Accumulate([]pair{{1, 1}}, last, 0, typed.Replace[pair]); err != nil {
			return fmt.Errorf("Replace on a struct: %v", err)
		}
		if err := w.Get(make([]pair, 2), last, 3); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Get past the end: %v, want ErrArg", err)
		}
		if err := w.UnlockAll(); err != nil {
			return err
		}
		return w.Free()
	})
}

// TestWindowProcsCompareAndSwapBits: CompareAndSwap compares floats bit
// for bit on every path (a device's compare of floats may take -0 for +0
// and no NaN for itself).
func TestWindowProcsCompareAndSwapBits(t *testing.T) {
	onWindowJobs(t, func(c *comm.Comm) error {
		w, part, err := typed.AllocWindow[float64](c, 2)
		if err != nil {
			return err
		}
		nan := math.Float64frombits(0x7ff8000000000123)
		part[1] = nan
		if err := w.Fence(); err != nil {
			return err
		}
		last := c.Size() - 1
		if c.Rank() == 0 {
			negZero := math.Copysign(0, -1)
			if old, err := w.CompareAndSwap(negZero, 1, last, 0); err != nil || math.Float64bits(old) != 0 {
				return fmt.Errorf("CompareAndSwap(-0) on +0: old %v (%v)", old, err)
			}
			if old, err := w.CompareAndSwap(nan, 2, last, 1); err != nil || math.Float64bits(old) != math.Float64bits(nan) {
				return fmt.Errorf("CompareAndSwap(NaN) on the same NaN: old %v (%v)", old, err)
			}
		}
		if err := w.Fence(); err != nil {
			return err
		}
		if c.Rank() == last && (math.Float64bits(part[0]) != 0 || part[1] != 2) {
			return fmt.Errorf("after the swaps: %v, want [0 2] (+0 kept, the NaN swapped)", part)
		}
		if err := w.Fence(); err != nil {
			return err
		}
		return w.Free()
	})
}
