//go:build rdma

package comm

import (
	"time"

	"github.com/mpgo/mpgo/comm/internal/fabric"
	"github.com/mpgo/mpgo/comm/internal/pmi"
)

// JoinFabricKV joins the job whose key-value space is kv over the RDMA
// backend, as JoinFabricJob does with the launcher's (tests play each
// process with goroutines: pmi.NewMemory).
func JoinFabricKV(kv pmi.Job, cfg FabricConfig) (*Job, error) {
	if cfg.RanksPerProcess == 0 {
		cfg.RanksPerProcess = 1
	}
	return joinFabricKV(kv, cfg)
}

// SetFabricBatchGap makes eager sends to one process within gap of each
// other batch (0: the default), so that tests see batches on a slow
// machine; it returns the previous setting.
func SetFabricBatchGap(gap time.Duration) time.Duration {
	return time.Duration(batchGapOverride.Swap(int64(gap)))
}

// CloseAfterFailedStart opens a device of one process over provider,
// makes its start fail (the endpoint is closed under it, so posting the
// receive slots fails), and closes it as JoinFabricJob does: through the
// world. It returns whether Close returned within limit, and start's
// error.
func CloseAfterFailedStart(provider string, limit time.Duration) (closed bool, err error) {
	d, err := newRDMADevice(fabric.Config{Provider: provider}, 0, 1, func(int) int { return 0 }, DefaultFabricEagerLimit)
	if err != nil {
		return true, err
	}
	w, err := NewWorld(1, Config{Local: []int{0}, Device: d, Process: func(int) int { return 0 }})
	if err != nil {
		d.Close()
		return true, err
	}
	d.w = w
	d.ep.Close()
	err = d.start()
	done := make(chan struct{})
	go func() {
		w.Close()
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

// LendsEager reports whether the job's device sends eager messages too
// large for a batch from the caller's buffer.
func (j *Job) LendsEager() bool {
	d, ok := j.dev.(*rdmaDevice)
	return ok && d.lend
}
