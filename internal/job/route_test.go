package job_test

import (
	"fmt"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
	"github.com/mpgo/mpgo/typed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The conformance suite over a job of two hosts (played in this
// process: process p on host p%2): the processes of one host talk
// through shared memory, the others over TCP, both devices under one
// engine, each process's end told once.
func TestRouteTwoHosts(t *testing.T) {
	devicetest.TestBackend(t, jobtest.Harness(func(eager int) job.Opener {
		noEnv := func(string) string { return "" }
		return job.WithNear(func(kv device.KV, l device.Layout) (job.Near, error) {
			return shm.Open(kv, shm.Config{Layout: l, EagerLimit: eager, Getenv: noEnv, Host: fmt.Sprint("host", kv.Rank()%2)})
		}, func(kv device.KV, l device.Layout) (device.Device, error) {
			return tcp.Open(kv, tcp.Config{Layout: l, EagerLimit: eager, Getenv: noEnv})
		})
	}))
}

// A job of 4 processes of 2 ranks on two played hosts (process p on host
// p%2): SplitType(SplitShared) groups the ranks of each host, ordered by
// world rank, and a reduction on that communicator stays on its host.
func TestSplitSharedTwoHosts(t *testing.T) {
	const procs, k = 4, 2
	noEnv := func(string) string { return "" }
	jobs := jobtest.JoinEach(t, procs, func(p int) (job.Config, job.Opener) {
		host := fmt.Sprint("host", p%2)
		return job.Config{RanksPerProcess: k, Host: host}, job.WithNear(
			func(kv device.KV, l device.Layout) (job.Near, error) {
				return shm.Open(kv, shm.Config{Layout: l, Getenv: noEnv, Host: host})
			}, func(kv device.KV, l device.Layout) (device.Device, error) {
				return tcp.Open(kv, tcp.Config{Layout: l, Getenv: noEnv})
			})
	})
	for r, err := range jobtest.Run(t, jobs, func(w *comm.Comm) error {
		s, err := w.SplitType(comm.SplitShared, 0)
		if err != nil {
			return err
		}
		host := w.Rank() / k % 2
		var want []int
		for r := range w.Size() {
			if r/k%2 == host {
				want = append(want, r)
			}
		}
		if s.Size() != len(want) || want[s.Rank()] != w.Rank() {
			return fmt.Errorf("rank %d of %d on its host, want %d of %v", s.Rank(), s.Size(), slices.Index(want, w.Rank()), want)
		}
		sum := make([]int, 1)
		if err := typed.Of[int](s).Allreduce([]int{w.Rank()}, sum, typed.Sum); err != nil {
			return err
		}
		if wantSum := sumOf(want); sum[0] != wantSum {
			return fmt.Errorf("the host's sum of ranks: %d, want %d", sum[0], wantSum)
		}
		return nil
	}) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func sumOf(s []int) int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// stubDevice is a device that carries nothing; it counts the calls a
// route makes to Drive and Waiting.
type stubDevice struct{ drives, waits int }

func (d *stubDevice) Start(device.Engine) error { return nil }
func (d *stubDevice) Send(int, int, device.Envelope, []byte, func(error)) error {
	return device.ErrNotSupported
}
func (d *stubDevice) Close() error { return nil }

// stubNear polls (device.Progressor); stubFar wants to hear of waits.
type (
	stubNear struct{ stubDevice }
	stubFar  struct{ stubDevice }
)

func (d *stubNear) Drive(w device.Waiter) bool { d.drives++; return w.Ready() }
func (d *stubFar) Waiting()                    { d.waits++ }

type readyWaiter bool

func (w readyWaiter) Ready() bool { return bool(w) }

// A route's Drive tells its far device that a rank waits (the TCP
// device's readers then poll) and drives its near device's progress.
func TestRouteDriveTellsFar(t *testing.T) {
	near, far := &stubNear{}, &stubFar{}
	r := job.Route(near, far, func(proc int) bool { return proc == 0 }, func(rank int) int { return rank })
	p, ok := r.(device.Progressor)
	if !ok {
		t.Fatal("a route is no device.Progressor")
	}
	if p.Drive(readyWaiter(false)) || !p.Drive(readyWaiter(true)) {
		t.Error("Drive does not report its waiter's readiness")
	}
	if near.drives != 2 || far.waits != 2 {
		t.Errorf("2 Drives: near driven %d times, far told %d times; want 2 and 2", near.drives, far.waits)
	}
}
