package comm

import (
	"time"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// PeerFailure is how a rank's failure reaches the other processes of a
// launched job: the failed rank's world rank and its original error (the
// error it returned, or its panic with where it happened), as its process
// told the others before it broke off. Their pending and later operations
// fail with an error wrapping [ErrAborted] and a PeerFailure, which wraps
// [ErrPeerLost]; find it with errors.As. A process that dies without a
// word (killed, its host lost) is reported as lost instead.
type PeerFailure = engine.PeerFailure

// NotifyFailure tells the other processes of w's job that world rank
// rank, of this process, failed with msg, waiting up to wait for the news
// to be sent: they then abort with a [PeerFailure]. A launcher's job calls
// it before it aborts w for a failed rank; it does nothing in a world
// without other processes, or once w stopped running (a failure caused by
// another's).
func (w *World) NotifyFailure(rank int, msg string, wait time.Duration) {
	w.e().NotifyFailure(rank, msg, wait)
}

// Err returns nil while w runs, and then why it stopped.
func (w *World) Err() error { return w.e().Err() }
