// Package wire carries mpgo's messages between processes over TCP: the
// frames and their decoder, the handshake that authenticates each
// connection with the job's secret, and the [Transport] that keeps the
// connections between this process and the job's others and moves
// messages over them.
//
// The package knows nothing of communicators or matching: a message is a
// [Header] (its envelope) and a payload. Package comm adapts it to its
// Device interface and feeds what arrives into its matching engine.
//
// # Connections
//
// Each process listens on one socket, on the interface its launcher
// names. The first message from process A to process B opens a connection
// from A to B (so there are no N² connections at start-up); everything A
// sends to B travels on it, in order, and one reader goroutine hands the
// messages on in that order, so messages between a pair are
// non-overtaking. B answers on the same connection with the frames that
// steer A's sending: clear-to-send for a rendezvous, and credit. Messages
// from B to A travel on B's own connection to A.
//
// Before anything else, each connection passes a handshake
// ([DialHandshake], [AcceptHandshake]): an HMAC-SHA256 challenge-response
// in both directions, keyed with the job secret. A stranger at the
// listening port, a process with another job's secret, or a replayed
// handshake fails it, and its connection is closed without a frame read.
// The handshake authenticates the ends; it neither encrypts the traffic
// nor protects it against an attacker on the path.
//
// # Protocols
//
// A message shorter than the eager limit travels with its payload (Eager):
// when its receive is already posted the payload is read from the socket
// straight into the receive buffer ([Message.PullArriving]), otherwise it is
// buffered until a receive takes it. So does a longer one when, as it
// leaves, the credit left covers its payload: that saves the rendezvous
// round trip, and the window still bounds what the receiver buffers.
// Any other longer message, and every synchronous send, is a rendezvous:
// the request to send (RTS) travels alone, the receive that matches it
// answers clear-to-send (CTS), and the payload follows in chunks (Data)
// read straight into the receive buffer.
// A receive that discards the message (truncation, wrong type) answers
// with a CTS that carries Discard, and no payload moves.
//
// Frames are written from the sender's buffers (header and payload with
// one writev, no copy into a frame). A send on an idle connection is
// written at once by the sending goroutine; the small frames of a burst
// (sends that follow each other within microseconds, such as a window of
// Isends) are queued and written together by the connection's writer
// goroutine with one writev.
//
// # Polling
//
// While a rank of this process waits for another process, the
// connections' readers poll their sockets with non-blocking reads for
// Config.Spin instead of waiting in the runtime's network poller, whose
// wake-up is most of a small message's latency (poll.go).
//
// # Credits
//
// A sender may have at most the window its receiver granted in the
// handshake outstanding at it: each message costs [MessageCost] bytes plus
// its eager payload, and the receiver returns the credit, a quarter window
// at a time, as its receives take the messages. A flood of small messages
// that nobody receives stops at the window instead of exhausting the
// receiver's memory; the sender's later messages wait, in order.
//
// # Ending
//
// Close sends Fin on every connection after what was queued, half-closes
// the socket and waits for the peers' Fin, so that nothing in flight is
// lost and the peers learn this process finished: messages it sent stay
// receivable, receives still waiting for it fail. A connection that ends
// any other way (the process died, its host did, or it sent a malformed
// frame) makes its process lost: transfers with it fail with errors
// wrapping [ErrPeerGone], and the [Handler] is told. Abort closes every
// connection at once, so that the peers see this process lost.
//
// # Heartbeat
//
// A process that is stopped (SIGSTOP, a debugger) or wedged keeps its
// connections open: its kernel answers for it, keep-alive included. With
// [Config.Heartbeat] set, each end of a connection writes a Ping frame
// every quarter heartbeat in which it wrote nothing else, and a
// connection on which nothing arrived for a heartbeat (and a quarter, to
// tell a slow reader or a machine that stood still from a silent peer)
// ends as lost. Pings are written and read by the transport's own
// goroutines, so a process whose ranks compute for a long time without
// calling the transport is not lost. The processes also form a ring of
// connections, each to the next, so that every process is watched.
package wire
