// Package comm holds mpgo's communicators, requests, status and errors, and
// the engine under them: the MPI matching rules and the protocols that move
// bytes between ranks.
//
// Users mostly reach it through package typed (slices of numbers and
// structs) and the value methods here ([Comm.SendValue],
// [Comm.RecvValue]); the byte-level methods ([Comm.Send], [Comm.Recv], …)
// take an element [Type] ([TypeOf] makes one of a Go type) so that a
// receiver can check what it gets.
//
// # Semantics
//
// A receive matches on (communicator, source or [AnySource], tag or
// [AnyTag]). Messages between one pair of ranks on one communicator are
// non-overtaking; receives are matched in the order they were posted, and a
// wildcard receive takes the oldest message that matches. A message longer
// than the receive buffer fails with [ErrTruncate] and one of another
// element type with [ErrType]; either way it is consumed and nothing else is
// disturbed. Each communicator made by [Comm.Dup] or [Comm.Split] has a
// context of its own.
//
// Every completed transfer is a happens-before edge from the sender's
// writes to the receiver's reads, so programs are clean under the race
// detector.
//
// # Protocols
//
// A send that finds its receive posted copies straight into the receive
// buffer. A send that arrives first is copied into pooled storage when it is
// shorter than the eager limit (64 KiB by default), and otherwise waits for
// its receive, which copies from the sender's buffer (rendezvous). A
// synchronous send always waits for its receive. [Comm.SendOwned] hands the
// slice itself over: a [Comm.RecvOwned] receives that very slice.
//
// The eager copies one rank has sent another and that are not received
// yet hold at most [DefaultEagerBuffer] (64 MiB) per pair of ranks, set
// with mpgo.WithEagerBuffer or the environment variable
// MPGO_EAGER_BUFFER ([Config].EagerBuffer). A message that finds the
// buffer full goes by rendezvous: [Comm.Send] returns once its receive
// has taken it, and the request of [Comm.Isend] (which never blocks)
// completes only then. A sender that floods a rank which does not
// receive is so held up, as the TCP backend's credit holds up a sender
// between processes. MPI allows a standard send to wait for its receive;
// a program that relies on more buffering than the bound — two ranks
// that each send the other more than it before receiving — is unsafe
// under MPI's rules, and now blocks where it used to run: the deadlock
// detector reports it, and a larger bound lets it run as before.
//
// # Waiting
//
// Blocked calls yield briefly and then sleep; a rank that completes another
// rank's operation wakes it. Goroutines never busy-wait, so hundreds of
// ranks on a few cores progress as well as two do.
package comm
