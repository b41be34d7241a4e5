package trace

// Op is what a record describes.
type Op uint8

// The operations.
const (
	OpSend Op = iota + 1 // a send, posted at Start, completed at End
	OpRecv               // a receive that matched a message
	OpColl               // a collective call, from entry to return
)

// String names the operation.
func (o Op) String() string {
	switch o {
	case OpSend:
		return "Send"
	case OpRecv:
		return "Recv"
	case OpColl:
		return "Collective"
	}
	return "?"
}

// Record flags.
const (
	// FlagAsync: a non-blocking request (Isend, Irecv, …), whose slice is
	// an async one from its start to its completion; otherwise a blocking
	// call's.
	FlagAsync uint8 = 1 << iota
	// FlagFailed: the operation completed with an error (a send failed by
	// an abort); it matched nothing.
	FlagFailed
)

// Record is one operation of one rank: a fixed-size value written into
// a ring (that of the P its rank's goroutine ran on). Times are the ticks of the set's Clock since it
// started (Export converts them to nanoseconds).
//
// A point-to-point record names its message by what pairs a send with the
// receive that matched it, whatever process either ran in (flows.go):
// the communicator's context, the sender's rank in the communicator
// (Src), the receiver's world rank (DstWorld) and the tag. A send knows
// these when it starts; a receive learns Src and Tag from the message.
type Record struct {
	Start, End int64
	Ctx        uint64
	Bytes      int64
	Src        int32 // send: this rank in the communicator; receive: the sender's
	Dst        int32 // send: the receiver in the communicator; receive: -1
	DstWorld   int32 // the receiver's world rank
	Tag        int32
	Rank       int32  // the world rank whose operation it is
	Name       uint16 // OpColl: the call's name (Set.Name); 0 for none
	Alg        uint16 // OpColl: the algorithm's name; 0 for none
	Op         Op
	Flags      uint8
}

// set fills r, a slot of a ring, with a point-to-point operation's
// record: field by field, in place (a composite literal is built on the
// stack and copied).
func (r *Record) set(rank int, start, end int64, ctx uint64, bytes, src, dst, dstWorld, tag int, op Op, flags uint8) {
	r.Start, r.End, r.Ctx, r.Bytes = start, end, ctx, int64(bytes)
	r.Src, r.Dst, r.DstWorld, r.Tag, r.Rank = int32(src), int32(dst), int32(dstWorld), int32(tag), int32(rank)
	r.Name, r.Alg, r.Op, r.Flags = 0, 0, op, flags
}
