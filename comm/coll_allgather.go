package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/coll"
	"github.com/mpgo/mpgo/comm/internal/memcopy"
)

// Allgather collects every member's send, elements of type t, into every
// member's recv, rank i's at block i (recv holds at least
// Size·len(send) bytes). In place, send and recv are the same slice and
// the caller's own block is already in place. Every member must send the
// same length.
func (c *Comm) Allgather(send, recv []byte, t Type) error {
	return c.guarded("allgather", func() error { return c.allgatherBlocks(send, recv, t) })
}

// allgatherBlocks is Allgather, unguarded: a step of a composite
// collective.
func (c *Comm) allgatherBlocks(send, recv []byte, t Type) error {
	const what = "allgather"
	if err := c.checkRooted(what, t, 0); err != nil {
		return err
	}
	n := c.size
	send, inPlace, local := c.allgatherArgs(what, send, recv, t)
	k := len(send)
	if local != nil {
		recv, inPlace = alignedBytes(n*k), false
	}
	off, cnt := make([]int, n), make([]int, n)
	for i := range off {
		off[i], cnt[i] = i*k, k
	}
	return c.allgather(what, kAllgather, send, recv, off, cnt, t, inPlace, local)
}

// Allgatherv is Allgather with a count per rank: rank i's send (counts[i]
// elements) goes to displs[i] elements into every recv (displs nil:
// packed). Every member passes the same counts and displs.
func (c *Comm) Allgatherv(send, recv []byte, counts, displs []int, t Type) error {
	return c.guarded("allgatherv", func() error { return c.allgatherVector(send, recv, counts, displs, t) })
}

// allgatherVector is Allgatherv, unguarded: a step of a composite
// collective.
func (c *Comm) allgatherVector(send, recv []byte, counts, displs []int, t Type) error {
	const what = "allgatherv"
	if err := c.checkRooted(what, t, 0); err != nil {
		return err
	}
	n, me := c.size, c.rank
	local := whole(what, "send buffer", send, t)
	inPlace := same(send, recv)
	off, cnt, err := checkVector(what, "receive", counts, displs, n, len(recv), t.Size())
	if local == nil {
		local = err
	}
	switch {
	case err != nil:
		off, cnt = make([]int, n), make([]int, n)
		cnt[me] = len(send) // go on with a buffer for its own block, to fail with the others
		recv, inPlace = alignedBytes(len(send)), false
	case inPlace:
		send = recv[off[me] : off[me]+cnt[me]]
	case local == nil && overlap(send, recv):
		local = fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
	case local == nil && len(send) != cnt[me]:
		local = fmt.Errorf("comm: %s: %d bytes to send, count %d: %w", what, len(send), cnt[me], ErrTruncate)
	}
	return c.allgather(what, kAllgatherv, send, recv, off, cnt, t, inPlace, local)
}

func (c *Comm) allgather(what string, kind collKind, send, recv []byte, off, cnt []int, t Type, inPlace bool, local error) error {
	me := c.rank
	if c.size == 1 {
		if local == nil && !inPlace {
			copy(recv[off[0]:], send)
		}
		return local
	}
	form := coll.Plain
	if kind == kAllgatherv {
		form = coll.Vector
	}
	alg := c.pick(coll.Allgather, form, len(send))
	if alg == coll.SharedMemory {
		return c.allgatherShm(what, kind, send, recv, off, cnt, t, inPlace, local)
	}
	x := c.call(what, collSig{kind: kind, t: t, n: sameLen(kind == kAllgather, len(send))}, nil, local)
	if kind == kAllgather && c.takeShared(x, c.size*len(send), true) {
		x.allgatherShared(send, recv, inPlace)
		return x.Result()
	}
	if alg == coll.Bruck {
		x.AllgatherBruck(send, recv, len(send))
		return x.Result()
	}
	if !inPlace && len(send) == cnt[me] {
		copy(recv[off[me]:], send)
	}
	x.AllgatherRing(recv, off, cnt)
	return x.Result()
}

func (c *Comm) allgatherShm(what string, kind collKind, send, recv []byte, off, cnt []int, t Type, inPlace bool, local error) error {
	sl := shmSlot{kind: kind, t: t, a: send, err: local}
	c.publish(&sl, send, coll.Staged(coll.Allgather, len(send), c.size))
	x, err := c.shmStart(what, &sl)
	if err != nil {
		return err
	}
	if x.err == nil {
		for i := range x.slots {
			if len(x.slots[i].a) != cnt[i] {
				x.err = fmt.Errorf("comm: %s: rank %d sends %d bytes, rank %d expects %d: %w",
					what, i, len(x.slots[i].a), c.rank, cnt[i], ErrTruncate)
				break
			}
		}
	}
	if x.err == nil {
		for i := range x.slots {
			if i != c.rank || !inPlace {
				copy(recv[off[i]:off[i]+cnt[i]], x.slots[i].a)
			}
		}
	}
	return x.finish()
}

// Alltoall sends block j of every member's send to rank j, which stores it
// at block i of its recv for sender i (MPI_Alltoall). send and recv have
// the same length, a multiple of Size; the same slice works in place.
// Every member must pass the same length.
func (c *Comm) Alltoall(send, recv []byte, t Type) error {
	return c.guarded("alltoall", func() error { return c.alltoallBlocks(send, recv, t) })
}

// alltoallBlocks is Alltoall, unguarded: a step of a composite collective.
func (c *Comm) alltoallBlocks(send, recv []byte, t Type) error {
	const what = "alltoall"
	if err := c.checkRooted(what, t, 0); err != nil {
		return err
	}
	n := c.size
	local := c.alltoallArgs(what, send, recv, t)
	k := len(send) / n
	if local != nil {
		send, recv = send[:n*k], alignedBytes(n*k)
	}
	off, cnt := make([]int, n), make([]int, n)
	for i := range off {
		off[i], cnt[i] = i*k, k
	}
	return c.alltoall(what, kAlltoall, send, off, cnt, recv, off, cnt, t, local)
}

// Alltoallv is Alltoall with counts and displacements (in elements) per
// rank on both sides: scounts[j] elements from sdispls[j] of send go to
// rank j, and rcounts[i] elements from rank i land at rdispls[i] of recv
// (displacements nil: packed). The same slice works in place when both
// sides describe the same layout.
func (c *Comm) Alltoallv(send []byte, scounts, sdispls []int, recv []byte, rcounts, rdispls []int, t Type) error {
	return c.guarded("alltoallv", func() error {
		return c.alltoallVector(send, scounts, sdispls, recv, rcounts, rdispls, t)
	})
}

// alltoallVector is Alltoallv, unguarded: a step of a composite
// collective.
func (c *Comm) alltoallVector(send []byte, scounts, sdispls []int, recv []byte, rcounts, rdispls []int, t Type) error {
	const what = "alltoallv"
	if err := c.checkRooted(what, t, 0); err != nil {
		return err
	}
	n := c.size
	soff, scnt, err := checkVector(what, "send", scounts, sdispls, n, len(send), t.Size())
	roff, rcnt, rerr := checkVector(what, "receive", rcounts, rdispls, n, len(recv), t.Size())
	local := err
	if local == nil {
		local = rerr
	}
	if local == nil && !same(send, recv) && overlap(send, recv) {
		local = fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
	}
	if local != nil {
		soff, scnt, roff, rcnt = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		send, recv = nil, nil
	}
	return c.alltoall(what, kAlltoallv, send, soff, scnt, recv, roff, rcnt, t, local)
}

func (c *Comm) alltoall(what string, kind collKind, send []byte, soff, scnt []int, recv []byte, roff, rcnt []int, t Type, local error) error {
	me := c.rank
	inPlace := same(send, recv) && len(send) > 0
	if c.size == 1 {
		if local == nil && !inPlace {
			if scnt[0] != rcnt[0] {
				return fmt.Errorf("comm: %s: sends %d bytes to itself, receives %d: %w", what, scnt[0], rcnt[0], ErrTruncate)
			}
			copy(recv[roff[0]:], send[soff[0]:soff[0]+scnt[0]])
		}
		return local
	}
	form := coll.Plain
	if kind == kAlltoallv {
		form = coll.Vector
	}
	alg := c.pick(coll.Alltoall, form, scnt[0])
	if alg == coll.SharedMemory {
		return c.alltoallShm(what, kind, send, soff, scnt, recv, roff, rcnt, t, inPlace, local)
	}
	x := c.call(what, collSig{kind: kind, t: t, n: sameLen(kind == kAlltoall, len(send))}, nil, local)
	if inPlace { // the sends read a copy
		tmp := alignedBytes(len(send)) // not scratch: the algorithms use that
		copy(tmp, send)
		send = tmp
	}
	if kind == kAlltoall && c.takeShared(x, len(send), !inPlace) { // in place, send is a new copy each call
		x.alltoallShared(send, recv, scnt[0])
		return x.Result()
	}
	if alg == coll.Bruck {
		x.AlltoallBruck(send, recv, scnt[0])
		return x.Result()
	}
	if scnt[me] != rcnt[me] {
		x.Fail(fmt.Errorf("comm: %s: sends %d bytes to itself, receives %d: %w", what, scnt[me], rcnt[me], ErrTruncate))
	} else {
		memcopy.CopyPart(recv[roff[me]:roff[me]+rcnt[me]], send[soff[me]:], len(recv))
	}
	x.AlltoallPairwise(send, soff, scnt, recv, roff, rcnt)
	return x.Result()
}

func (c *Comm) alltoallShm(what string, kind collKind, send []byte, soff, scnt []int, recv []byte, roff, rcnt []int, t Type, inPlace bool, local error) error {
	sl := shmSlot{kind: kind, t: t, a: send, off: soff, cnt: scnt, err: local}
	c.publish(&sl, send, coll.Staged(coll.Alltoall, len(send), c.size) || inPlace)
	x, err := c.shmStart(what, &sl)
	if err != nil {
		return err
	}
	me := c.rank
	if x.err == nil {
		for i := range x.slots {
			if n := x.slots[i].cnt[me]; n != rcnt[i] {
				x.err = fmt.Errorf("comm: %s: rank %d sends %d bytes to rank %d, which expects %d: %w",
					what, i, n, me, rcnt[i], ErrTruncate)
				break
			}
		}
	}
	if x.err == nil {
		for i := range x.slots {
			sl := &x.slots[i]
			memcopy.CopyPart(recv[roff[i]:roff[i]+rcnt[i]], sl.a[sl.off[me]:sl.off[me]+sl.cnt[me]], len(recv))
		}
	}
	return x.finish()
}
