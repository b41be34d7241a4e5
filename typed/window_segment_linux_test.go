//go:build linux && (amd64 || arm64)

package typed_test

import (
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// openSHM opens the shared-memory backend for a played process of host.
func openSHM(host string) job.Opener {
	return func(kv device.KV, l device.Layout) (device.Device, error) {
		return shm.Open(kv, shm.Config{Layout: l, Host: host, Getenv: func(string) string { return "" }})
	}
}

// openTCP opens the TCP backend for a played process.
func openTCP(kv device.KV, l device.Layout) (device.Device, error) {
	return tcp.Open(kv, tcp.Config{Layout: l, Getenv: func(string) string { return "" }})
}

// inSequence runs bodies one after the other on each rank.
func inSequence(bodies []func(c *comm.Comm) error) func(c *comm.Comm) error {
	return func(c *comm.Comm) error {
		for i, body := range bodies {
			if err := body(c); err != nil {
				return fmt.Errorf("rank function %d: %w", i, err)
			}
		}
		return nil
	}
}

// TestWindowSharedProcs runs the shared windows' rank functions on
// processes of one host joined by the shared-memory backend (played by
// worlds of this process, each mapping the segment through the
// descriptor it received, as a process of its own would), with one rank
// and with two goroutine ranks per process.
func TestWindowSharedProcs(t *testing.T) {
	for _, shape := range []struct{ procs, k int }{{4, 1}, {2, 2}, {3, 3}} {
		t.Run(fmt.Sprintf("shm/%dx%d", shape.procs, shape.k), func(t *testing.T) {
			jobs := jobtest.Join(t, shape.procs, job.Config{RanksPerProcess: shape.k}, openSHM("host"))
			for r, err := range jobtest.Run(t, jobs, inSequence(sharedBodies())) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// TestWindowSharedProcsRefused: processes joined by TCP or the loopback
// device share no memory: AllocSharedWindow fails on every rank.
func TestWindowSharedProcsRefused(t *testing.T) { onWindowJobs(t, sharedRefused) }

// TestWindowSharedSpansHosts: four processes on two played hosts, the
// shared-memory backend within each and TCP between them. A shared
// window of the whole world would span hosts and fails on every rank;
// one of each host's processes works.
func TestWindowSharedSpansHosts(t *testing.T) {
	jobs := jobtest.JoinEach(t, 4, func(p int) (job.Config, job.Opener) {
		return job.Config{RanksPerProcess: 1}, job.WithNear(func(kv device.KV, l device.Layout) (job.Near, error) {
			return shm.Open(kv, shm.Config{Layout: l, Host: fmt.Sprint("host", p/2), Getenv: func(string) string { return "" }})
		}, openTCP)
	})
	errs := jobtest.Run(t, jobs, func(c *comm.Comm) error {
		if err := sharedRefused(c); err != nil {
			return err
		}
		host, err := c.Split(c.Rank()/2, 0)
		if err != nil {
			return err
		}
		if err := inSequence(sharedBodies()[1:4])(host); err != nil { // not sharedMapped: the other host's processes map theirs in this process too
			return err
		}
		return host.Free()
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
