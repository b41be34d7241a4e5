//go:build rdma

package rdma

import (
	"os"
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
	err = d.Start(stoppedEngine{device.ErrClosed})
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

// stoppedEngine is the engine of a world that stopped with err: it takes
// no message and reports err. device.ErrClosed is a world closed because
// its device failed to start (not aborted: Close takes its graceful
// path), device.ErrAborted one that aborted.
type stoppedEngine struct{ err error }

func (e stoppedEngine) Arrive(int, int, device.Envelope, device.Incoming) (bool, error) {
	return false, e.err
}
func (stoppedEngine) PeerFinished(int) {}
func (stoppedEngine) PeerLost(error)   {}
func (e stoppedEngine) Err() error     { return e.err }

// EndpointName returns the name of d's endpoint, as its peers know it.
func EndpointName(d *Device) ([]byte, error) { return d.ep.Name() }

// ForgedEager returns the frame of an eager message as process from would
// send it (from world rank src to dst, with tag on context ctx), made by
// someone who does not hold the job's secret.
func ForgedEager(from, src, dst, tag int, ctx uint64, payload []byte) []byte {
	return eagerFrame(from, src, dst, tag, ctx, payload, 0)
}

// ReplayedEager is ForgedEager with the token d expects from process
// from: the frame someone who read the pair's traffic could replay.
func ReplayedEager(d *Device, from, src, dst, tag int, ctx uint64, payload []byte) []byte {
	return eagerFrame(from, src, dst, tag, ctx, payload, d.peers[from].tokIn)
}

func eagerFrame(from, src, dst, tag int, ctx uint64, payload []byte, tok uint64) []byte {
	h := header{kind: kindEager, from: uint32(from), src: src, dst: dst, source: int64(src), tag: int64(tag), ctx: ctx, n: len(payload)}
	b := make([]byte, fabricHeader+len(payload))
	h.put(b, tok)
	copy(b[fabricHeader:], payload)
	return b
}

// Source reports whether d's provider names the sender of what arrives.
func Source(d *Device) bool { return d.info.Source }

// EndpointFile returns the file of d's endpoint (fabric.Info.File).
func EndpointFile(d *Device) string { return d.info.File }

// FileAfterAbort opens the device of process 0 of a job of two over
// provider whose other process never says hello (its address is this
// one's own: what comes from there is rejected), starts it in a world
// that aborted, and reports the endpoint's file, whether it existed
// before the start, and whether it still did once limit passed after;
// then it closes the device.
func FileAfterAbort(provider string, limit time.Duration) (file string, before, after bool, err error) {
	zero := func(int) int { return 0 }
	d, err := newDevice(fabric.Config{Provider: provider}, 0, 2, device.Layout{Ranks: 2, Owner: zero}, DefaultEagerLimit)
	if err != nil {
		return "", false, false, err
	}
	defer d.Close()
	name, err := d.ep.Name()
	if err == nil {
		err = d.connect([][]byte{name, name}, make([]byte, 32))
	}
	if err != nil {
		return "", false, false, err
	}
	file = d.info.File
	_, serr := os.Stat(file)
	before = serr == nil
	if err := d.Start(stoppedEngine{device.ErrAborted}); err != nil {
		return file, before, true, err
	}
	for start := time.Now(); time.Since(start) < limit; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(file); err != nil {
			return file, before, false, nil
		}
	}
	return file, before, true, nil
}
