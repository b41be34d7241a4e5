package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/mpgo/mpgo/comm/device"
)

// Control messages: the engine's own messages between the processes of a
// job, on a context no communicator has (comm's contexts are never
// below 4). They travel through the device like any message, so they keep
// its order with the messages sent before them, and the engine takes them
// on arrival instead of matching them: a failure note (a rank that failed
// says why, before its process breaks off).

// controlContext is the context of control messages.
const controlContext uint64 = 0

// Tags of control messages.
const (
	tagFailure = 1 // payload: the failed rank's error, as text
)

// maxNote bounds a control message (a failure note's text, a process's
// lines of a deadlock report).
const maxNote = 64 << 10

// PeerFailure is the error of a rank of another process that failed
// (returned an error or panicked), as that process told before it broke
// off: the rank and its original error's text. It wraps ErrPeerLost.
type PeerFailure struct {
	Rank int
	Msg  string
}

func (e *PeerFailure) Error() string { return fmt.Sprintf("rank %d failed: %s", e.Rank, e.Msg) }

// Unwrap returns ErrPeerLost.
func (e *PeerFailure) Unwrap() error { return ErrPeerLost }

// NotifyFailure tells every other process of the job that world rank
// rank, of this process, failed with msg, and waits up to wait for the
// notes to be sent: the others then abort with a [PeerFailure] instead
// of learning only that this process broke off. Call it before this
// world aborts. It does nothing without a device or once the world
// stopped (the failure is then a consequence of another's).
func (w *World) NotifyFailure(rank int, msg string, wait time.Duration) {
	if w.dev == nil || w.state.Load() != stateRunning {
		return
	}
	if len(msg) > maxNote {
		msg = msg[:maxNote]
	}
	w.tellAll(rank, tagFailure, []byte(msg), wait)
}

// tellAll sends a control message from local world rank src to the lowest
// rank of every other process, and waits up to wait until the device
// wrote them all.
func (w *World) tellAll(src, tag int, payload []byte, wait time.Duration) {
	dsts := w.firstOfProcesses()
	sent := make(chan error, len(dsts))
	n := 0
	for _, dst := range dsts {
		if err := w.sendControl(src, dst, tag, payload, func(err error) { sent <- err }); err == nil {
			n++
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for ; n > 0; n-- {
		select {
		case <-sent:
		case <-t.C:
			return
		}
	}
}

// firstOfProcesses returns the lowest world rank of every other process.
func (w *World) firstOfProcesses() []int {
	seen := make(map[int]bool)
	var ranks []int
	for r := range w.eps {
		if w.isLocal(r) {
			continue
		}
		if p := w.process(r); !seen[p] {
			seen[p] = true
			ranks = append(ranks, r)
		}
	}
	return ranks
}

// sendControl sends a control message from local world rank src to world
// rank dst, of another process.
func (w *World) sendControl(src, dst, tag int, payload []byte, done func(error)) error {
	env := device.Envelope{Context: controlContext, Source: src, Tag: tag, Len: len(payload)}
	env.Type, env.Fingerprint = Byte.wire()
	return w.dev.Send(src, dst, env, payload, done)
}

// control takes a control message from world rank src on arrival.
// It fails as Arrive does: with the world's error once it stopped, with
// ErrArg for a message that is not one.
func (w *World) control(src int, typ Type, env device.Envelope, m device.Incoming) error {
	if err := w.failure(); err != nil && env.Tag != tagReport && env.Tag != tagHave {
		return err // a deadlock's report is taken even then: the deadlock stopped the world
	}
	if typ != Byte || env.Len > maxNote || env.Tag < tagFailure || env.Tag > tagHave {
		return fmt.Errorf("comm: control message %d of type %d, %d bytes: %w", env.Tag, typ, env.Len, ErrArg)
	}
	buf := make([]byte, env.Len)
	take := func() {
		if err := m.Pull(buf); err != nil {
			return
		}
		w.controlArrived(src, env.Tag, buf)
	}
	if env.Rendezvous {
		w.pulls.Add(1)
		go func() {
			defer w.pulls.Done()
			take()
		}()
		return nil
	}
	if err := m.PullArriving(buf); err != nil {
		if errors.Is(err, ErrPeerLost) || errors.Is(err, ErrClosed) {
			return nil
		}
		return err
	}
	w.controlArrived(src, env.Tag, buf)
	return nil
}

// controlArrived acts on a control message's payload.
func (w *World) controlArrived(src, tag int, payload []byte) {
	switch tag {
	case tagFailure:
		w.AbortWith(&PeerFailure{Rank: src, Msg: string(payload)})
	default:
		w.arriveAcross(src, tag, payload)
	}
}
