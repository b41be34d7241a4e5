package comm

import (
	"fmt"
	"unsafe"

	"github.com/mpgo/mpgo/comm/internal/coll"
	"github.com/mpgo/mpgo/comm/internal/engine"
	"github.com/mpgo/mpgo/comm/internal/memcopy"
)

// Non-blocking and persistent collectives through shared memory.
//
// Where every member of a communicator runs in this process, a
// non-blocking or persistent collective of a long vector need not move
// its data through messages: the members' goroutines read each other's buffers in place, as
// the blocking shared-memory algorithms do. The operation may: each
// member's buffers belong to it from its start until its request
// completes there, and every access below falls between the two.
//
//  1. The members hand each other their buffers (an owned message of a
//     reference to them, which moves no data), so that each knows the
//     others have started.
//  2. Each reduces (or moves) its part of the vector straight into every
//     member's receive buffer. The parts are disjoint, so no two members
//     write one byte, and a member reads of another's send buffer only its
//     own part, which nobody writes (a send buffer that is also its
//     receive buffer, in place, is written only by the part's owner, after
//     it read it).
//  3. A barrier: after it, no member touches another's buffers, and each
//     may complete its request.
//
// Every wait is the point-to-point algorithms' (collCall): quiet on a
// helper goroutine, which so never spins or parks in the deadlock
// detector's sight, and the rank's own where the rank runs the operation
// in its Wait; an abort or a declared deadlock fails it as it fails those
// algorithms. The
// point-to-point algorithms move each byte through a message per step
// (Rabenseifner's Allreduce of 1 MiB on 4 goroutine ranks took 1.31 ms, 5
// times the blocking shared-memory Allreduce's 0.25 ms).

// nbSharedMin is the shortest vector (bytes) a non-blocking collective
// moves through shared memory: below it, the reference exchange's
// messages cost more than the point-to-point algorithm's.
const nbSharedMin = 64 << 10

// tagNBShare is the tag of the references that the members of a
// non-blocking collective hand each other (see coll/tags.go's ranges).
const tagNBShare = 162

// nbBufs are a member's buffers in a non-blocking collective through
// shared memory.
type nbBufs struct {
	self       uintptr // address of this nbBufs: tells a reference from a copy
	send, recv []byte
}

// nbPick returns the algorithm of the non-blocking form of collective k
// on n bytes: shared memory where every member runs in this process, no
// algorithm was pinned and the vector is long, else the point-to-point
// algorithm pick chooses.
func (c *Comm) nbPick(k coll.Collective, n int) coll.Algorithm {
	if n < nbSharedMin || c.size == 1 || c.pinned(k) || !c.sharedMemory() {
		return c.pick(k, coll.NonBlocking, n)
	}
	if c.ct != nil {
		c.ct.picked(coll.SharedMemory, n)
	}
	return coll.SharedMemory
}

// takeShared reports whether call x, of n bytes on c, a non-blocking or
// persistent collective's private communicator, goes through shared
// memory (collState.shared and a long vector), and readies x for it:
// where c keeps its members' buffers between calls (a persistent
// collective's, when keep), x keeps them there.
func (c *Comm) takeShared(x *collCall, n int, keep bool) bool {
	st := c.state()
	if !st.shared || n < nbSharedMin {
		return false
	}
	if st.keep && keep {
		x.bufs = &st.bufs
	}
	return true
}

// shareBufs hands every other member mine and returns every member's
// buffers, by rank; nil once the call stopped (a fatal error, recorded).
func (x *collCall) shareBufs(mine *nbBufs) []*nbBufs {
	n, me := x.Size(), x.Rank()
	mine.self = uintptr(unsafe.Pointer(mine))
	all := make([]*nbBufs, n)
	all[me] = mine
	recvs := make([]*engine.Request, 0, n-1)
	for i := range n {
		if i == me {
			continue
		}
		r, err := x.c.startRecv(nil, Byte, i, tagNBShare, true, true)
		if err != nil {
			x.Stop(err)
			break
		}
		recvs = append(recvs, r)
	}
	ref := refBytes(mine)
	for i := 0; i < n && x.OK(); i++ {
		if i == me {
			continue
		}
		r, err := x.c.IsendOwned(ref, Byte, i, tagNBShare)
		if err == nil {
			_, err = x.wait(r)
		}
		if err != nil {
			x.Stop(err)
		}
	}
	for k, r := range recvs {
		if !x.OK() {
			r.Retract(ErrCanceled)
		} else if x.quiet {
			if _, err := r.WaitQuiet(); err != nil {
				x.Stop(err)
			}
		}
		_, got, err := r.Finish() // waits as the rank where not quiet
		if err != nil && x.OK() {
			x.Stop(err)
		}
		i := k // the receives skip me
		if k >= me {
			i++
		}
		if err == nil && x.OK() {
			b := fromRef[nbBufs](got)
			if b == nil || b.self != uintptr(unsafe.Pointer(b)) {
				x.Stop(fmt.Errorf("rank %d's buffers came as a copy, not shared: %w", i, ErrArg))
				continue
			}
			all[i] = b
		}
	}
	if !x.OK() {
		return nil
	}
	return all
}

// shared runs part, the caller's share of a collective through shared
// memory, on every member's buffers (the caller's are send and recv),
// between the exchange of the buffers and the closing barrier (see
// above). A call that failed its agreement does nothing: it failed on
// every member alike.
//
// A persistent collective (x.bufs set) exchanges the buffers at its
// first start only, as they stay the plan's; each later start passes a
// barrier first instead, after which every member has started (a
// member's buffers are the operation's from its start on, not before),
// and allocates nothing.
func (x *collCall) shared(send, recv []byte, part func(all []*nbBufs)) {
	if !x.OK() {
		return
	}
	var all []*nbBufs
	if x.bufs != nil && *x.bufs != nil {
		if x.Dissemination(); !x.OK() {
			return
		}
		all = *x.bufs
	} else if all = x.shareBufs(&nbBufs{send: send, recv: recv}); all == nil {
		return
	}
	if x.bufs != nil {
		*x.bufs = all
	}
	part(all)
	x.Dissemination()
}

// allreduceShared is Allreduce through shared memory (see above): the
// caller reduces its part of the vector, in rank order, in rank 0's
// receive buffer (only rank 0's send buffer may be that memory, and it is
// read first), one block at a time, and copies each block to the others'.
func (x *collCall) allreduceShared(send, recv []byte, op Op) {
	x.shared(send, recv, func(all []*nbBufs) {
		n, size, u := len(send), len(all), coll.Unit(x.t.Size())
		units := (n + u - 1) / u
		lo, hi := min(n, units*x.Rank()/size*u), min(n, units*(x.Rank()+1)/size*u)
		bl := max(u, block/u*u)
		acc := all[0].recv
		for b := lo; b < hi; b += bl {
			e := min(hi, b+bl)
			a := acc[b:e]
			if !same(a, all[0].send[b:e]) {
				copy(a, all[0].send[b:e])
			}
			for i := 1; i < size; i++ {
				op(a, all[i].send[b:e])
			}
			for i := 1; i < size; i++ {
				copy(all[i].recv[b:e], a)
			}
		}
	})
}

// allgatherShared is Allgather through shared memory (see above): the
// caller copies every member's block into its receive buffer. In place, a
// member's block is its own part of its receive buffer, which only the
// others read; it writes only the others' parts.
func (x *collCall) allgatherShared(send, recv []byte, inPlace bool) {
	x.shared(send, recv, func(all []*nbBufs) {
		k, me := len(send), x.Rank()
		for i, b := range all {
			if i != me || !inPlace {
				memcopy.CopyPart(recv[i*k:(i+1)*k], b.send, len(recv))
			}
		}
	})
}

// alltoallShared is Alltoall of blocks of k bytes through shared memory
// (see above): the caller copies block me of every member's send buffer
// into its receive buffer (a send buffer that was the receive buffer, in
// place, is a copy by now: nobody writes what the others read).
func (x *collCall) alltoallShared(send, recv []byte, k int) {
	x.shared(send, recv, func(all []*nbBufs) {
		me := x.Rank()
		for i, b := range all {
			memcopy.CopyPart(recv[i*k:(i+1)*k], b.send[me*k:(me+1)*k], len(recv))
		}
	})
}

// bcastShared is Bcast through shared memory (see above): every member
// but the root copies the root's buffer into its own.
func (x *collCall) bcastShared(buf []byte, root int) {
	x.shared(buf, nil, func(all []*nbBufs) {
		if x.Rank() != root {
			copy(buf, all[root].send)
		}
	})
}
