//go:build linux && (amd64 || arm64)

package shm_test

import (
	"testing"
	"time"

	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// Processes that wait for a message that comes late burn no core
// meanwhile: their ranks poll for a short window, then park, and each
// receiver loop sleeps on its bell (the eventfd, in the runtime's poller:
// a read that did not wait would spin). Three processes, so that on a
// machine of two cores the ranks outnumber them and wait by yielding
// their core first; two on a larger one.
func TestIdleProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const wait = 300 * time.Millisecond
	jobs := jobtest.Join(t, 3, job.Config{}, openSHM(shm.Config{})(0))
	var used time.Duration
	errs := jobtest.Run(t, jobs, func(w *comm.Comm) error {
		if err := w.Barrier(); err != nil {
			return err
		}
		b := make([]byte, 8)
		if w.Rank() != 0 {
			_, err := w.Recv(b, comm.Byte, 0, 1)
			return err
		}
		before := jobtest.CPUTime(t)
		time.Sleep(wait)
		used = jobtest.CPUTime(t) - before
		for r := 1; r < w.Size(); r++ {
			if err := w.Send(b, comm.Byte, r, 1); err != nil {
				return err
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Logf("%v of CPU time in %v, three processes waiting", used, wait)
	if used > wait/2 {
		t.Errorf("%v of CPU time in %v: idle processes spin", used, wait)
	}
}
