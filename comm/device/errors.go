package device

import "errors"

// Sentinel errors of the boundary. Package comm exports the same values
// (comm.ErrClosed is ErrClosed, and so on), so that an error a device
// returns is recognised by user code with errors.Is, whichever package it
// tests against, as os.ErrNotExist is fs.ErrNotExist.
var (
	// ErrRank reports a rank outside the world, or not where it should be.
	ErrRank = errors.New("comm: invalid rank")
	// ErrArg reports a bad argument or a malformed envelope.
	ErrArg = errors.New("comm: invalid argument")
	// ErrAborted reports that the world aborted.
	ErrAborted = errors.New("comm: run aborted")
	// ErrClosed reports the use of a world, or a device, after it closed.
	ErrClosed = errors.New("comm: communicator closed")
	// ErrNotSupported reports an operation, a provider or a build
	// without the backend.
	ErrNotSupported = errors.New("comm: not supported")
	// ErrPeerLost reports that a process of the job is gone. When it
	// broke off (it died, its host did, its connection failed, or it sent
	// a malformed message) the whole job aborts: every pending and later
	// operation fails with an error wrapping both ErrPeerLost and
	// ErrAborted. When it finished normally, a receive or probe that was
	// still waiting for one of its ranks, and a send to one, fail with
	// ErrPeerLost alone.
	ErrPeerLost = errors.New("comm: peer process lost")
	// ErrBootstrap reports that this process could not join the job its
	// launcher started, or that a backend could not open: the launcher's
	// environment or protocol, or the exchange of addresses, failed.
	ErrBootstrap = errors.New("comm: cannot join the job")
)
