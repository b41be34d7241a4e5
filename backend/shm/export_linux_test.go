//go:build linux && (amd64 || arm64)

package shm

import "github.com/mpgo/mpgo/comm/device"

// ReadOnArrival returns how many rendezvous d (a *Device) read on arrival.
func ReadOnArrival(d device.Device) uint64 { return d.(*Device).onArrival.Load() }

// PipedIn returns how many rendezvous d received through the ring in
// chunks, the size above which it pipes them although it could read them
// (0: never), and whether it cannot read them at all.
func PipedIn(d device.Device) (n uint64, limit int, noCMA bool) {
	dd := d.(*Device)
	return dd.pipedIn.Load(), dd.pipeLimit, dd.noCMA.Load()
}

// Started returns how many piped rendezvous d's engine started (no
// goroutine waiting for them).
func Started(d device.Device) uint64 { return d.(*Device).pullsStarted.Load() }

// SplitReads returns how many parts of split reads d's senders wrote, how
// many d's receivers read themselves (split_linux.go), and whether d
// splits reads at all (not where the host is oversubscribed).
func SplitReads(d device.Device) (written, taken uint64, on bool) {
	dd := d.(*Device)
	return dd.splitWritten.Load(), dd.splitTaken.Load(), dd.split
}

// RendezvousOut returns the rendezvous sends of d to its peers not
// finished yet, as the peers count them (peer.rvOut).
func RendezvousOut(d device.Device) int {
	n := 0
	for _, p := range d.(*Device).peers {
		if p != nil {
			n += int(p.rvOut.Load())
		}
	}
	return n
}
