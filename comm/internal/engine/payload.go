package engine

// The payload interfaces, as package comm documents them for users
// (comm.Source, comm.Sink; comm.Remote is this Remote): the engine calls
// them as comm's contract says.

// Remote is a payload still with its sender: a local Source, or a
// device's message not moved yet.
type Remote interface {
	Pull(dst []byte) error
}

// Source produces a SendFrom's payload where a receive wants it.
type Source interface {
	Pull(dst []byte) error
}

// Sink takes a RecvInto's payload in place of a receive buffer.
type Sink interface {
	Cap() int
	Take(data []byte, from Remote, n int) error
}
