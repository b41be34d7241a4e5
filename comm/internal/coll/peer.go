package coll

// Peer is one rank's link to the other members of a collective context:
// tagged messages of bytes between ranks 0 to Size()-1, matched in order
// per sender as MPI matches them. A [Call] uses one Peer from one goroutine.
//
// Buffers belong to the operation until it completes: until Send returns,
// or until Wait returns for a request of Isend or Irecv. The receives take
// the next message from src whatever its tag (the Call checks the tag): a
// message that does not fit the buffer, or is of another element type, is
// consumed and fails the receive with an error that wraps
// [Errors].Truncate or [Errors].Type, with its tag in the Status. Any other
// error is fatal (the run aborted or deadlocked, the communicator was
// freed): the Call stops communicating.
type Peer interface {
	// Rank returns the caller's rank, in [0, Size()).
	Rank() int
	// Size returns the number of ranks.
	Size() int
	// Send sends buf to dst with tag and returns once buf may be reused.
	Send(buf []byte, dst, tag int) error
	// Recv receives the next message from src into buf.
	Recv(buf []byte, src int) (Status, error)
	// Sendrecv sends sbuf to dst with stag and receives the next message
	// from src into rbuf, both at once.
	Sendrecv(sbuf []byte, dst, stag int, rbuf []byte, src int) (Status, error)
	// Isend starts a send; Wait or Withdraw completes it.
	Isend(buf []byte, dst, tag int) (Request, error)
	// Irecv starts a receive from src; Wait or Withdraw completes it.
	Irecv(buf []byte, src int) (Request, error)
	// Wait blocks until r completes and returns its outcome.
	Wait(r Request) (Status, error)
	// Withdraw ends r without waiting for it, after a fatal error, so
	// that no operation outlives the call.
	Withdraw(r Request)
	// Scratch returns working memory for k buffers of n bytes each, each
	// at a multiple of 64 bytes from an 8-aligned start. It is the
	// caller's until its next collective.
	Scratch(k, n int) [][]byte
}

// Status describes a message received: its tag and its length in bytes.
type Status struct {
	Tag int
	Len int
}

// Request is a [Peer]'s handle on an operation in progress; only the Peer
// that made it looks inside.
type Request interface{}

// Errors are the sentinels a [Call]'s errors wrap, by class of failure
// (package comm gives its ErrArg, ErrTruncate, ErrType and ErrRank). A
// class also travels in the tag of poison, so that every rank a failure
// reaches fails with the same sentinel.
type Errors struct {
	Arg      error // a bad argument, or a peer in another collective
	Truncate error // counts or lengths differ between ranks
	Type     error // element types differ between ranks
	Rank     error // a bad rank
}
