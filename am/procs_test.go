package am_test

import (
	"sync"
	"testing"

	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// Runs across processes. Each process of a job is played by a world of
// this process, joined to the others by a device: the in-memory loopback
// device of the conformance suite, or the TCP backend, so that requests
// between processes travel as bytes while those inside one go by
// reference.

// jobRun is how a test runs fn on a job's ranks: each rank's error.
type jobRun func(t testing.TB, fn func(w *comm.Comm) error) []error

// goroutines runs n goroutine ranks (one process).
func goroutines(n int) jobRun {
	return func(t testing.TB, fn func(w *comm.Comm) error) []error {
		errs := make([]error, n)
		var mu sync.Mutex
		err := runErr(n, func(w *comm.Comm) error {
			err := fn(w)
			mu.Lock()
			errs[w.Rank()] = err
			mu.Unlock()
			return err
		})
		if err != nil && errs[0] == nil {
			errs[0] = err
		}
		return errs
	}
}

// loopback runs procs processes of k ranks joined by the loopback device.
func loopback(procs, k int) jobRun {
	return func(t testing.TB, fn func(w *comm.Comm) error) []error {
		layout := devicetest.Blocks(procs, k)
		devs, _ := devicetest.Loopbacks(procs, layout, comm.DefaultEagerLimit)
		errs, err := devicetest.Run(devs, layout, 0, fn)
		if err != nil {
			t.Fatal(err)
		}
		return errs
	}
}

// overTCP runs procs processes of k ranks joined by the TCP backend (on
// the loopback interface; their launcher's key-value store in memory).
func overTCP(procs, k int) jobRun {
	return func(t testing.TB, fn func(w *comm.Comm) error) []error {
		open := func(kv device.KV, l device.Layout) (device.Device, error) {
			return tcp.Open(kv, tcp.Config{Layout: l, Getenv: func(string) string { return "" }})
		}
		return jobtest.Run(t, jobtest.Join(t, procs, job.Config{RanksPerProcess: k}, open), fn)
	}
}

// jobs are the jobs the tests across processes run on.
var jobs = []struct {
	name string
	run  jobRun
}{
	{"goroutines/4", goroutines(4)},
	{"loopback/2x2", loopback(2, 2)},
	{"loopback/4x1", loopback(4, 1)},
	{"tcp/2x2", overTCP(2, 2)},
	{"tcp/4x1", overTCP(4, 1)},
}

// onJobs runs fn on every rank of each job of jobs, as a subtest.
func onJobs(t *testing.T, fn func(w *comm.Comm) error) {
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			for r, err := range j.run(t, fn) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}
