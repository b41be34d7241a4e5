package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// Gather collects every member's send, elements of type t, into root's
// recv, rank i's at block i (recv holds at least Size·len(send) bytes; it
// is ignored elsewhere). In place, the root passes send and recv as the
// same slice, with its own block already in place. Every member must send
// the same length.
func (c *Comm) Gather(send, recv []byte, t Type, root int) error {
	const what = "gather"
	if err := c.beginRooted(what, t, root); err != nil {
		return err
	}
	defer c.leave()
	n, me := c.size, c.rank
	send, inPlace, local := c.gatherArgs(what, send, recv, t, root)
	k := len(send)
	if me == root && local != nil {
		recv, inPlace = alignedBytes(n*k), false
	}
	if n == 1 {
		if local == nil && !inPlace {
			copy(recv, send)
		}
		return local
	}
	alg := c.pick(coll.Gather, coll.Plain, k)
	if alg == coll.SharedMemory {
		return c.gatherShm(what, kGather, send, recv, nil, nil, t, root, inPlace, local)
	}
	x := c.call(what, collSig{kind: kGather, root: root, t: t, n: k}, nil, local)
	if alg == coll.Binomial {
		x.GatherBinomial(send, recv, k, root)
	} else {
		off, cnt := make([]int, n), make([]int, n)
		for i := range off {
			off[i], cnt[i] = i*k, k
		}
		x.GatherFlat(send, recv, off, cnt, root, inPlace)
	}
	return x.Result()
}

// Gatherv is Gather with a count per rank: rank i's send (counts[i]
// elements) goes to root's recv at displs[i] elements (displs nil: packed
// in rank order). counts and displs are read at the root only. In place,
// the root's send and recv are the same slice, its block already in place.
func (c *Comm) Gatherv(send, recv []byte, counts, displs []int, t Type, root int) error {
	const what = "gatherv"
	if err := c.beginRooted(what, t, root); err != nil {
		return err
	}
	defer c.leave()
	n, me := c.size, c.rank
	local := whole(what, "send buffer", send, t)
	inPlace := me == root && same(send, recv)
	var off, cnt []int
	if me == root {
		var err error
		off, cnt, err = checkVector(what, "receive", counts, displs, n, len(recv), t.Size())
		if local == nil {
			local = err
		}
		switch {
		case err != nil:
			off, cnt = make([]int, n), make([]int, n)
			recv, inPlace = nil, false
		case inPlace:
			send = recv[off[me] : off[me]+cnt[me]]
		case overlap(send, recv) && local == nil:
			local = fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
		}
	}
	if n == 1 {
		if local == nil && !inPlace {
			if len(send) != cnt[0] {
				return fmt.Errorf("comm: %s: %d bytes to send, count %d: %w", what, len(send), cnt[0], ErrTruncate)
			}
			copy(recv[off[0]:], send)
		}
		return local
	}
	alg := c.pick(coll.Gather, coll.Vector, 0)
	if alg == coll.SharedMemory {
		return c.gatherShm(what, kGatherv, send, recv, off, cnt, t, root, inPlace, local)
	}
	x := c.call(what, collSig{kind: kGatherv, root: root, t: t, n: anyLen}, nil, local)
	x.GatherFlat(send, recv, off, cnt, root, inPlace)
	c.settle(x, what)
	return x.Result()
}

// Scatter hands block i of root's send (Size blocks of len(recv) bytes)
// to rank i's recv (send is ignored elsewhere). In place, the root passes
// send and recv as the same slice and its own block stays where it is.
// Every member must receive the same length.
func (c *Comm) Scatter(send, recv []byte, t Type, root int) error {
	return c.guarded("scatter", func() error { return c.scatterBlocks(send, recv, t, root) })
}

// scatterBlocks is Scatter, unguarded: a step of a composite collective.
func (c *Comm) scatterBlocks(send, recv []byte, t Type, root int) error {
	const what = "scatter"
	if err := c.checkRooted(what, t, root); err != nil {
		return err
	}
	n, me := c.size, c.rank
	recv, inPlace, local := c.scatterArgs(what, send, recv, t, root)
	if me == root && local != nil {
		send, inPlace = alignedBytes(n*len(recv)), false
	}
	if n == 1 {
		if local == nil && !inPlace {
			copy(recv, send)
		}
		return local
	}
	alg := c.pick(coll.Scatter, coll.Plain, len(recv))
	if alg == coll.SharedMemory {
		return c.scatterShm(what, kScatter, send, recv, nil, nil, t, root, inPlace, local)
	}
	x := c.call(what, collSig{kind: kScatter, root: root, t: t, n: len(recv)}, nil, local)
	if alg == coll.Binomial {
		x.ScatterBinomial(send, recv, len(recv), root)
	} else {
		k := len(recv)
		off, cnt := make([]int, n), make([]int, n)
		for i := range off {
			off[i], cnt[i] = i*k, k
		}
		x.ScatterFlat(send, recv, off, cnt, root, inPlace)
	}
	return x.Result()
}

// Scatterv is Scatter with a count per rank: rank i gets counts[i]
// elements of root's send from displs[i] (nil: packed). counts and displs
// are read at the root only; each rank's recv must hold exactly its count.
func (c *Comm) Scatterv(send []byte, counts, displs []int, recv []byte, t Type, root int) error {
	return c.guarded("scatterv", func() error { return c.scatterVector(send, counts, displs, recv, t, root) })
}

// scatterVector is Scatterv, unguarded: a step of a composite collective.
func (c *Comm) scatterVector(send []byte, counts, displs []int, recv []byte, t Type, root int) error {
	const what = "scatterv"
	if err := c.checkRooted(what, t, root); err != nil {
		return err
	}
	n, me := c.size, c.rank
	local := whole(what, "receive buffer", recv, t)
	inPlace := me == root && same(send, recv)
	var off, cnt []int
	if me == root {
		var err error
		off, cnt, err = checkVector(what, "send", counts, displs, n, len(send), t.Size())
		if local == nil {
			local = err
		}
		switch {
		case err != nil:
			off, cnt = make([]int, n), make([]int, n)
			send, inPlace = nil, false
		case inPlace:
			recv = send[off[me] : off[me]+cnt[me]]
		case overlap(send, recv) && local == nil:
			local = fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
		}
	}
	if n == 1 {
		if local == nil && !inPlace {
			if len(recv) != cnt[0] {
				return fmt.Errorf("comm: %s: receive buffer of %d bytes, count %d: %w", what, len(recv), cnt[0], ErrTruncate)
			}
			copy(recv, send[off[0]:])
		}
		return local
	}
	alg := c.pick(coll.Scatter, coll.Vector, 0)
	if alg == coll.SharedMemory {
		return c.scatterShm(what, kScatterv, send, recv, off, cnt, t, root, inPlace, local)
	}
	x := c.call(what, collSig{kind: kScatterv, root: root, t: t, n: anyLen}, nil, local)
	x.ScatterFlat(send, recv, off, cnt, root, inPlace)
	c.settle(x, what)
	return x.Result()
}

func (c *Comm) checkRooted(what string, t Type, root int) error {
	if err := c.collUsable(what); err != nil {
		return err
	}
	if err := checkType(what, t); err != nil {
		return err
	}
	return c.checkRoot(what, root)
}

// beginRooted is checkRooted, then enter: the caller leaves once done.
func (c *Comm) beginRooted(what string, t Type, root int) error {
	if err := c.checkRooted(what, t, root); err != nil {
		return err
	}
	return c.enter(what)
}

// checkGathered checks the root's buffer of all blocks (whole, need bytes)
// against its own block (mine).
func checkGathered(what, name string, mine, whole []byte, need int) error {
	if len(whole) < need {
		return fmt.Errorf("comm: %s: %s buffer of %d bytes, %d needed: %w", what, name, len(whole), need, ErrTruncate)
	}
	if overlap(mine, whole) {
		return fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
	}
	return nil
}

// gatherShm: each rank publishes its block (staged when small); the root
// copies staged blocks, and ranks with large blocks write theirs straight
// into the root's buffer.
func (c *Comm) gatherShm(what string, kind collKind, send, recv []byte, off, cnt []int, t Type, root int, inPlace bool, local error) error {
	me := c.rank
	sl := shmSlot{kind: kind, root: root, t: t, a: send, err: local}
	if me == root {
		sl.b, sl.off, sl.cnt = recv, off, cnt
	}
	if coll.Staged(coll.Gather, len(send), c.size) {
		sl.kind |= kStaged
		if !inPlace {
			sl.a = c.stageInput(send)
		}
	} else {
		sl.kind |= kDirect
	}
	x, err := c.shmStart(what, &sl)
	if err != nil {
		return err
	}
	rs := &x.slots[root]
	at := func(i int) (int, int) {
		if kind == kGather {
			k := len(rs.a)
			return i * k, k
		}
		return rs.off[i], rs.cnt[i]
	}
	if x.err == nil {
		for i := range x.slots {
			if _, n := at(i); len(x.slots[i].a) != n {
				x.err = fmt.Errorf("comm: %s: rank %d sends %d bytes, the root expects %d: %w",
					what, i, len(x.slots[i].a), n, ErrTruncate)
				break
			}
		}
	}
	if x.err == nil {
		for i := range x.slots {
			sl := &x.slots[i]
			o, n := at(i)
			switch {
			case i == root && inPlace && me == root:
			case sl.kind&kStaged != 0 && me == root, sl.kind&kDirect != 0 && i == me:
				copy(rs.b[o:o+n], sl.a)
			}
		}
	}
	return x.finish()
}

// scatterShm: the root publishes its buffer (staged when small) and every
// rank copies its own block out.
func (c *Comm) scatterShm(what string, kind collKind, send, recv []byte, off, cnt []int, t Type, root int, inPlace bool, local error) error {
	me := c.rank
	sl := shmSlot{kind: kind, root: root, t: t, b: recv, err: local}
	if me == root {
		sl.off, sl.cnt = off, cnt
		c.publish(&sl, send, coll.Staged(coll.Scatter, len(send), c.size))
	}
	x, err := c.shmStart(what, &sl)
	if err != nil {
		return err
	}
	rs := &x.slots[root]
	at := func(i int) (int, int) {
		if kind == kScatter {
			k := len(rs.a) / c.size
			return i * k, k
		}
		return rs.off[i], rs.cnt[i]
	}
	if x.err == nil {
		for i := range x.slots {
			if _, n := at(i); len(x.slots[i].b) != n {
				x.err = fmt.Errorf("comm: %s: rank %d receives %d bytes, the root sends %d: %w",
					what, i, len(x.slots[i].b), n, ErrTruncate)
				break
			}
		}
	}
	if x.err == nil && !(me == root && inPlace) {
		o, n := at(me)
		copy(recv, rs.a[o:o+n])
	}
	return x.finish()
}
