//go:build linux && (amd64 || arm64)

package comm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// TestAllocShared: a segment of processes joined by the shared-memory
// backend (played by worlds of this process) is one memory, zero-filled,
// in every process, each rank's stores seen by the others after a
// barrier; bad sizes fail on every rank with ErrArg, and ranks all in
// this process with ErrNotSupported.
func TestAllocShared(t *testing.T) {
	open := func(kv device.KV, l device.Layout) (device.Device, error) {
		return shm.Open(kv, shm.Config{Layout: l, Getenv: func(string) string { return "" }})
	}
	jobs := jobtest.Join(t, 3, job.Config{RanksPerProcess: 2}, open)
	errs := jobtest.Run(t, jobs, func(c *comm.Comm) error {
		size := 4096
		if c.Rank() == 1 {
			size = 8192
		}
		if _, err := c.AllocShared(size); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("sizes that differ: %v, want ErrArg", err)
		}
		if _, err := c.AllocShared(0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("size 0: %v, want ErrArg", err)
		}
		mine, err := c.Split(c.Rank()/2, 0) // the two ranks of this process
		if err != nil {
			return err
		}
		if _, err := mine.AllocShared(4096); !errors.Is(err, comm.ErrNotSupported) {
			return fmt.Errorf("ranks of one process: %v, want ErrNotSupported", err)
		}
		s, err := c.AllocShared(4096)
		if err != nil {
			return err
		}
		b := s.Bytes()
		if len(b) != 4096 || b[c.Rank()] != 0 {
			return fmt.Errorf("a segment of %d bytes, byte %d is %d", len(b), c.Rank(), b[c.Rank()])
		}
		b[c.Rank()] = byte(c.Rank() + 1)
		if err := c.Barrier(); err != nil {
			return err
		}
		for r := range c.Size() {
			if b[r] != byte(r+1) {
				return fmt.Errorf("rank %d reads %d at byte %d, which rank %d stored %d", c.Rank(), b[r], r, r, r+1)
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := s.Free(); err != nil {
			return err
		}
		if err := s.Free(); err != nil {
			return fmt.Errorf("a second Free: %v", err)
		}
		return mine.Free()
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
