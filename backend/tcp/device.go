package tcp

import (
	"errors"
	"fmt"

	"github.com/mpgo/mpgo/backend/tcp/internal/wire"
	"github.com/mpgo/mpgo/comm/device"
)

// Device is the TCP backend's [device.Device]: this process's ranks reach
// the job's other processes through a wire.Transport (one listening
// socket, a connection per ordered pair of processes opened on first use,
// frames authenticated by the job secret at connection time). Arrivals are
// fed to the engine on the connection's reader goroutine, one at a time
// and in order, so the engine sees each pair's messages in the order they
// were sent:
//
//   - an eager message that matches a posted receive at once is read from
//     the socket straight into the receive buffer (no copy:
//     [device.Incoming.PullArriving]);
//   - one that must wait is buffered by the transport and copied into the
//     receive buffer when one matches (one copy);
//   - a rendezvous (synchronous, or large when the credit did not cover
//     it) waits with its sender; the receive that matches it sends
//     clear-to-send and the payload is read straight into its buffer. The
//     engine pulls a rendezvous on a goroutine of its own: the reader must
//     stay free to read that very payload.
//
// A process that breaks off (its connection fails without a goodbye)
// aborts the world with a cause that wraps [device.ErrPeerLost]. A
// process that finishes normally says goodbye: what it sent stays
// receivable, and only the receives still waiting for it then fail.
//
// Invariants:
//   - e is set once, by Start, before the transport starts: the
//     transport's goroutines, the only callers of the handler methods,
//     read it after that.
//   - The device holds no lock of its own; the transport serialises each
//     connection's arrivals on its reader goroutine.
type Device struct {
	e     device.Engine
	t     *wire.Transport
	owner func(rank int) int
	ranks int // in the world
}

var (
	_ device.Device     = (*Device)(nil)
	_ device.Progressor = (*Device)(nil)
	_ wire.Handler      = (*Device)(nil)
	_ device.Incoming   = (*wire.Message)(nil)
)

// Drive implements [device.Progressor]: it tells the transport that a
// rank is about to park (Waiting) and returns at once; the rank parks,
// leaving its P to the reader that will wake it.
func (d *Device) Drive(w device.Waiter) bool {
	d.Waiting()
	return w.Ready()
}

// Waiting tells the device that a rank of this process is about to wait
// for another process: for [Config.Spin] from now, the connections'
// readers poll their sockets with non-blocking reads instead of waiting
// in the runtime's network poller, whose wake-up (a thread woken in
// epoll_wait, then handed the reader) cost most of a small message's
// latency. A device that routes some processes elsewhere (shared memory
// on this host) calls it from its own Drive.
//
// mpbench latency under mpiexec -n 2 with MPGO_SHM=0 (3 alternated runs,
// medians, µs one way; MPICH 4.0.2 over UCX's TCP transport beside it):
// 1 B 13.9 -> 6.1 (4.4), 1 KiB 31.4 -> 5.2 (4.5), 16 KiB 31.9 -> 6.1
// (33.6), 64 KiB 39.8 -> 12.3 (34.8); an 8-byte Allreduce 23.5 -> 11.1.
func (d *Device) Waiting() { d.t.Waiting() }

// Start implements [device.Device]: the transport starts accepting
// connections and delivering to e. With a heartbeat it waits until this
// process's neighbours in the ring of watched connections are connected
// (see [Config.Heartbeat]); errors wrap [device.ErrPeerLost].
func (d *Device) Start(e device.Engine) error {
	d.e = e
	return d.t.Start()
}

// Send implements [device.Device].
func (d *Device) Send(src, dst int, env device.Envelope, data []byte, done func(error)) error {
	h := wire.Header{Src: src, Dst: dst, Source: env.Source, Tag: env.Tag, Context: env.Context, Type: env.Type, Fingerprint: env.Fingerprint}
	if env.Sync {
		h.Flags = wire.FlagSync
	}
	return d.t.Send(d.owner(dst), h, data, done) // errors come wrapped (wrapError)
}

// wrapError is the transport's Config.WrapError: its errors wrap the
// boundary's sentinels too.
func wrapError(proc int, err error) error {
	switch {
	case errors.Is(err, device.ErrPeerLost) || errors.Is(err, device.ErrClosed):
		return err // wrapped already
	case errors.Is(err, wire.ErrPeerGone):
		return fmt.Errorf("comm: process %d: %w: %w", proc, device.ErrPeerLost, err)
	case errors.Is(err, wire.ErrClosed):
		return fmt.Errorf("comm: process %d: %w: %w", proc, device.ErrClosed, err)
	}
	return err
}

// Close implements [device.Device]: a graceful goodbye to every connected
// process, or, when the world was aborted, an abrupt close that the others
// see as this process lost.
func (d *Device) Close() error {
	if d.e == nil || errors.Is(d.e.Err(), device.ErrAborted) {
		d.t.Abort()
	} else {
		d.t.Close()
	}
	return nil
}

// Arrive implements wire.Handler: it hands a message from another process
// to the engine. An envelope the engine cannot accept (an unknown element
// type, a rank that is not here) closes the connection as malformed; a
// message that arrives once the world stopped is dropped.
func (d *Device) Arrive(h *wire.Header, m *wire.Message) error {
	env := device.Envelope{Context: h.Context, Source: h.Source, Tag: h.Tag, Type: h.Type, Fingerprint: h.Fingerprint,
		Len: m.Size(), Sync: h.Flags&wire.FlagSync != 0, Rendezvous: m.Rendezvous()}
	_, err := d.e.Arrive(h.Src, h.Dst, env, m)
	if errors.Is(err, device.ErrArg) || errors.Is(err, device.ErrRank) {
		return err
	}
	return nil
}

// Finished implements wire.Handler: process proc sent its last message
// here.
func (d *Device) Finished(proc int) { d.e.PeerFinished(proc) }

// Lost implements wire.Handler: a process that broke off aborts the
// world, with a cause that names the process's ranks (err, wrapped by
// wrapError, names the process).
func (d *Device) Lost(proc int, err error) {
	d.e.PeerLost(fmt.Errorf("comm: %s lost: %w", device.Layout{Ranks: d.ranks, Owner: d.owner}.Describe(proc), wrapError(proc, err)))
}
