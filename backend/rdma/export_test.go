//go:build rdma

package rdma

import (
	"time"

	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
	"github.com/mpgo/mpgo/comm/device"
)

// SetBatchGap makes eager sends to one process within gap of each other
// batch (0: the default), so that tests see batches on a slow machine; it
// returns the previous setting.
func SetBatchGap(gap time.Duration) time.Duration {
	return time.Duration(batchGapOverride.Swap(int64(gap)))
}

// CloseAfterFailedStart opens a device of one process over provider,
// makes its start fail (the endpoint is closed under it, so posting the
// receive slots fails), and closes it as a job does when its world cannot
// be made. It returns whether Close returned within limit, and Start's
// error.
func CloseAfterFailedStart(provider string, limit time.Duration) (closed bool, err error) {
	one := func(int) int { return 0 }
	d, err := newDevice(fabric.Config{Provider: provider}, 0, 1, device.Layout{Ranks: 1, Owner: one}, DefaultEagerLimit)
	if err != nil {
		return true, err
	}
	d.ep.Close()
	err = d.Start(failedEngine{})
	done := make(chan struct{})
	go func() {
		d.Close()
		close(done)
	}()
	select {
	case <-done:
		return true, err
	case <-time.After(limit):
		return false, err
	}
}

// failedEngine is the engine of a world closed because its device failed
// to start: it takes no message, and reports the world closed (not
// aborted), so that Close takes its graceful path.
type failedEngine struct{}

func (failedEngine) Arrive(int, int, device.Envelope, device.Incoming) (bool, error) {
	return false, device.ErrClosed
}
func (failedEngine) PeerFinished(int) {}
func (failedEngine) PeerLost(error)   {}
func (failedEngine) Err() error       { return device.ErrClosed }
