package comm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Agreement among the members of a communicator while they build a new one
// (Create, CartCreate, GraphCreate, DistGraphCreateAdjacent, Cart.Sub,
// CreateIntercomm, Intercomm.Merge).
//
// MPI calls a construction erroneous when the members pass inconsistent
// arguments, and implementations then hang or misbehave. mpgo's
// constructors instead exchange a few words per member first (a flag and a
// fingerprint of the arguments) and fail on every member with the same
// error when anything disagrees, so a bad argument on one rank never leaves
// the others blocked. A member whose own arguments are bad still takes part
// in the exchange, as [Comm.Split] does.

// Tags on a collective context (ctx|1) owned by groups, communicator
// management and topologies: the range 200–299 is reserved for them. The
// members of a communicator call its collectives in the same order and
// messages between a pair are non-overtaking, so one tag per step would
// suffice; distinct tags make deadlock reports say which step hung.
const (
	tagAgreeGather    = 200 // agree: each member's words to rank 0
	tagAgreeBcast     = 201 // agree: the table, from rank 0 down a binomial tree
	tagIntercommBcast = 202 // CreateIntercomm: the local leader's result to its group
	tagMergeLeaders   = 203 // Merge: the two leaders' exchange, on the intercomm
	tagMergeBcast     = 204 // Merge: the remote group's answer, to the local group
)

// Colors that derive the contexts of communicators built here from their
// parent's (see childContext). The parent's creation count already
// separates one construction from the next; the color only names the kind.
const (
	colorCart           = -3
	colorGraph          = -4
	colorDistGraph      = -5
	colorIntercommLocal = -6
	colorMerge          = -7
	colorNeighbor       = -8
	colorHierNode       = -9  // coll_hier.go: the members in one process
	colorHierLeaders    = -10 // coll_hier.go: one member per process
)

// agree gathers every member's words (the same number on each) to all
// members, on c's collective context: a linear gather to rank 0, then a
// binomial-tree broadcast of the table. Returns the table, member-major.
func (c *Comm) agree(words []int64) ([]int64, error) {
	cc := c.coll()
	k := len(words)
	mine := putWords(words)
	var table []byte
	if c.rank != 0 {
		if err := cc.Send(mine, Byte, 0, tagAgreeGather); err != nil {
			return nil, err
		}
	} else {
		table = make([]byte, 8*k*c.size)
		copy(table, mine)
		for r := 1; r < c.size; r++ {
			if _, err := cc.Recv(table[8*k*r:8*k*(r+1)], Byte, r, tagAgreeGather); err != nil {
				return nil, err
			}
		}
	}
	table, err := cc.bcastBlob(table, 0, tagAgreeBcast)
	if err != nil {
		return nil, err
	}
	if len(table) != 8*k*c.size {
		return nil, fmt.Errorf("comm: agreement table of %d bytes, want %d: %w", len(table), 8*k*c.size, ErrArg)
	}
	return getWords(table), nil
}

// bcastBlob broadcasts root's data, of a length only the root knows, along
// a binomial tree (as MPICH's MPIR_Bcast_binomial) with the given tag; the
// other members get a slice of their own. c must be on a collective
// context. data is ignored except at the root.
func (c *Comm) bcastBlob(data []byte, root, tag int) ([]byte, error) {
	n := c.size
	vr := (c.rank - root + n) % n
	mask := 1
	for ; mask < n; mask <<= 1 {
		if vr&mask != 0 {
			got, _, err := c.RecvOwned(Byte, (c.rank-mask+n)%n, tag)
			if err != nil {
				return nil, err
			}
			data = got
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < n {
			if err := c.Send(data, Byte, (c.rank+mask)%n, tag); err != nil {
				return nil, err
			}
		}
	}
	return data, nil
}

func putWords(words []int64) []byte {
	b := make([]byte, 8*len(words))
	for i, v := range words {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

// getWords decodes little-endian words; a trailing partial word is dropped.
func getWords(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// fingerprint hashes lists of integers, their lengths included, so that
// members can check cheaply that they passed the same arguments.
type fingerprint uint64

func (h *fingerprint) add(xs ...int) {
	*h = fingerprint(mix64(uint64(*h) ^ mix64(uint64(len(xs))+0x9e3779b97f4a7c15)))
	for _, x := range xs {
		*h = fingerprint(mix64(uint64(*h) ^ uint64(x)))
	}
}

func (h *fingerprint) addBools(bs []bool) {
	xs := make([]int, len(bs))
	for i, b := range bs {
		if b {
			xs[i] = 1
		}
	}
	h.add(xs...)
}

// errCodes are the sentinels a member can report to the others during an
// agreement; code 0 is success, code i+1 is errCodes[i].
var errCodes = []error{ErrArg, ErrRank, ErrTag, ErrClosed, ErrAborted, ErrDeadlock, ErrTruncate, ErrType}

// errCode returns the code of err's sentinel (ErrArg's when none matches).
func errCode(err error) int64 {
	if err == nil {
		return 0
	}
	for i, e := range errCodes {
		if errors.Is(err, e) {
			return int64(i + 1)
		}
	}
	return 1
}

// codeErr returns the sentinel of code, or nil for 0.
func codeErr(code int64) error {
	if code == 0 {
		return nil
	}
	if code < 1 || int(code) > len(errCodes) {
		return ErrArg
	}
	return errCodes[code-1]
}
