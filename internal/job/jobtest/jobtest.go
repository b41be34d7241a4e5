// Package jobtest plays the processes of a job in one test process: each
// a job.Job of its own, joined to the others through an in-memory
// key-value store (pmi.NewMemory) by a real backend. The backends' tests
// and benchmarks share it.
package jobtest

import (
	"errors"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/pmi"
)

// Join joins procs processes with cfg through open, concurrently as
// launched processes would, and fails t (ending the joined ones) when one
// of them cannot join; t skips when the backend is not supported here (a
// provider the machine lacks).
func Join(t testing.TB, procs int, cfg job.Config, open job.Opener) []*job.Job {
	t.Helper()
	return JoinEach(t, procs, func(int) (job.Config, job.Opener) { return cfg, open })
}

// JoinEach is [Join] with each process's configuration and opener from
// setup(p): processes that differ (as those of several played hosts).
func JoinEach(t testing.TB, procs int, setup func(p int) (job.Config, job.Opener)) []*job.Job {
	t.Helper()
	kvs := pmi.NewMemory(procs)
	jobs := make([]*job.Job, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for p := range procs {
		cfg, open := setup(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs[p], errs[p] = job.Join(kvs[p], cfg, open)
			if errs[p] != nil {
				// As a launcher ends the job when a process exits: the
				// others' fence fails instead of waiting for this one.
				kvs[p].Abort(1, errs[p].Error())
			}
		}()
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			for _, j := range jobs {
				if j != nil {
					j.Abort(1, "test")
				}
			}
			if errors.Is(err, comm.ErrNotSupported) {
				t.Skipf("process %d: %v", p, err)
			}
			t.Fatalf("process %d: %v", p, err)
		}
	}
	return jobs
}

// Harness returns the [devicetest.Harness] of the backend whose device
// open(eager) opens with eager as its eager limit (zero: its default):
// each job is joined with [Join] and played with [Run].
func Harness(open func(eager int) job.Opener) devicetest.Harness {
	return func(t testing.TB, s devicetest.Shape, fn func(w *comm.Comm) error) []error {
		t.Helper()
		cfg := job.Config{RanksPerProcess: s.Ranks, EagerLimit: s.Eager}
		return Run(t, Join(t, s.Procs, cfg, open(s.Eager)), fn)
	}
}

// Run runs fn on every rank of jobs (each a process of one job, on any
// backend) and closes them, as devicetest.Play does; it returns the
// ranks' errors.
func Run(t testing.TB, jobs []*job.Job, fn func(w *comm.Comm) error) []error {
	t.Helper()
	procs := make([]devicetest.Process, len(jobs))
	for i, j := range jobs {
		procs[i] = j
	}
	return devicetest.Play(procs, fn)
}

// RoundTrip is one round of the backends' ping-pong benchmarks between
// ranks 0 and 1 of w: rank 0 sends buf to rank 1 with tag and receives it
// back, rank 1 receives it and sends it back.
func RoundTrip(w *comm.Comm, buf []byte, tag int) error {
	peer := 1 - w.Rank()
	if w.Rank() == 0 {
		if err := w.Send(buf, comm.Byte, peer, tag); err != nil {
			return err
		}
		_, err := w.Recv(buf, comm.Byte, peer, tag)
		return err
	}
	if _, err := w.Recv(buf, comm.Byte, peer, tag); err != nil {
		return err
	}
	return w.Send(buf, comm.Byte, peer, tag)
}
