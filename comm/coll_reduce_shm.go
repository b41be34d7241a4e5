package comm

import (
	"github.com/mpgo/mpgo/comm/internal/coll"
)

// The shared-memory reductions. Small vectors (replicated): every rank
// stages its input, passes one gate, and each rank that needs a result
// computes it from the staged inputs itself. Short vectors on many ranks
// (combined, Reduce and Allreduce): every rank copies its input to its
// row of a shared table, the last to reach the gate reduces the rows, and
// each rank that needs the result copies it out. Larger vectors (direct): one
// gate, then each rank reduces its chunk of the vector across every rank's
// input, block by block in a cache-resident accumulator, and writes the
// block to every output that needs it: each input is read once and each
// output written once, by all ranks in parallel; a second gate ends the
// call.

func (c *Comm) reduceShm(send, recv []byte, t Type, op Op, root int, local error) error {
	if coll.Combined(coll.Reduce, len(send), c.size) {
		return c.reduceCombined("reduce", kReduce, send, recv, t, op, root, local)
	}
	sl := shmSlot{kind: kReduce, root: root, t: t, n: len(send), a: send, err: local}
	if c.rank == root {
		sl.b = recv
	}
	rep := coll.Staged(coll.Reduce, len(send), c.size)
	c.publish(&sl, send, rep)
	x, err := c.shmStart("reduce", &sl)
	if err != nil {
		return err
	}
	if x.err == nil {
		x.err = x.sameLen("send buffer", 0)
	}
	if x.err == nil {
		switch {
		case rep && c.rank == root:
			x.fold(recv, op, c.size, 0, len(send))
		case !rep:
			out := x.slots[root].b
			if root != 0 && same(x.slots[root].a, out) {
				// In place at the root: its input must be read before out
				// takes rank 0's.
				x.reduceChunk(op, len(send), nil, func(lo, hi int, acc []byte) { copy(out[lo:hi], acc) })
			} else {
				x.reduceChunk(op, len(send), out, func(int, int, []byte) {})
			}
		}
	}
	return x.finish()
}

func (c *Comm) allreduceShm(send, recv []byte, t Type, op Op, local error) error {
	if coll.Combined(coll.Allreduce, len(send), c.size) {
		return c.reduceCombined("allreduce", kAllreduce, send, recv, t, op, -1, local)
	}
	sl := shmSlot{kind: kAllreduce, t: t, n: len(send), a: send, b: recv, err: local}
	rep := coll.Staged(coll.Allreduce, len(send), c.size)
	c.publish(&sl, send, rep)
	x, err := c.shmStart("allreduce", &sl)
	if err != nil {
		return err
	}
	if x.err == nil {
		x.err = x.sameLen("send buffer", 0)
	}
	if x.err == nil {
		if rep {
			x.fold(recv, op, c.size, 0, len(send))
		} else {
			// Accumulate in rank 0's output (only rank 0's input may share
			// its memory, and it is read first), then copy to the others.
			x.reduceChunk(op, len(send), x.slots[0].b, func(lo, hi int, acc []byte) {
				for i := 1; i < len(x.slots); i++ {
					copy(x.slots[i].b[lo:hi], acc)
				}
			})
		}
	}
	return x.finish()
}

// reduceCombined is the combined variant of Reduce to root, or of
// Allreduce when root < 0 (coll.Combined: len(send) ≤ coll.CombineLimit).
func (c *Comm) reduceCombined(what string, kind collKind, send, recv []byte, t Type, op Op, root int, local error) error {
	x, err := c.combinedArrive(what, kind, send, t, op, root, local)
	if err == nil {
		err = x.await()
	}
	if err != nil {
		return err
	}
	return x.combinedEnd(recv, root)
}

// combinedArrive is reduceCombined up to its gate, which the caller
// awaits (shmCall.await) before it calls combinedEnd: Allreduce does so
// itself (see gate.await).
func (c *Comm) combinedArrive(what string, kind collKind, send []byte, t Type, op Op, root int, local error) (*shmCall, error) {
	s, err := c.shm()
	if err != nil {
		return nil, collErr(what, err)
	}
	n := len(send)
	c.settleLeft()         // before the row is written
	p := c.state().gen & 1 // the generation shmArrive will use
	copy(s.rows[p][c.rank*coll.CombineLimit:][:n], send)
	sig := shmSig{kind: kind | kStaged, root: int32(max(root, 0)), t: t, n: n}
	return c.shmArrive(what, sig, errSlot(sig, local), op)
}

// errSlot returns the slot of sig holding the local argument error err,
// nil when err is: made on the heap (not inlined), so that the callers'
// frames, cold lines on 100,000 ranks, do not hold one (see shmArrive).
//
//go:noinline
func errSlot(sig shmSig, err error) *shmSlot {
	if err == nil {
		return nil
	}
	sl := new(shmSlot)
	sl.clear(sig)
	sl.err = err
	return sl
}

// combinedEnd ends a combined reduction through its gate: the result in
// recv (at root, or everywhere when root < 0).
func (x *shmCall) combinedEnd(recv []byte, root int) error {
	if x.err == nil {
		x.err = x.sameLen("send buffer", 0)
	}
	if x.err == nil && (root < 0 || x.c.rank == root) {
		copy(recv, x.s.result[x.p]) // len(recv) bytes: as long as the inputs (checkInOut)
	}
	return x.finish()
}

// reduceChunk reduces the caller's chunk of every slot's a (n bytes each),
// in rank order, one block at a time, in into (when not nil, at the
// block's offset; it may be slot 0's input) or else in working memory, and
// hands each reduced block to put.
func (x *shmCall) reduceChunk(op Op, n int, into []byte, put func(lo, hi int, acc []byte)) {
	lo, hi := x.chunk(n)
	bl := x.blockLen()
	var acc []byte
	if into == nil {
		acc = x.c.scratch(1, bl)[0]
	}
	for b := lo; b < hi; b += bl {
		e := min(hi, b+bl)
		a := acc[:min(len(acc), e-b)]
		if into != nil {
			a = into[b:e]
		}
		if !same(a, x.slots[0].a[b:e]) {
			copy(a, x.slots[0].a[b:e])
		}
		for i := 1; i < len(x.slots); i++ {
			op(a, x.slots[i].a[b:e])
		}
		put(b, e, a)
	}
}

func (c *Comm) scanShm(what string, send, recv []byte, t Type, op Op, exclusive bool, local error) error {
	kind := kScan
	if exclusive {
		kind = kExscan
	}
	sl := shmSlot{kind: kind, t: t, n: len(send), a: send, b: recv, err: local}
	rep := coll.Staged(coll.Scan, len(send), c.size)
	c.publish(&sl, send, rep)
	x, err := c.shmStart(what, &sl)
	if err != nil {
		return err
	}
	if x.err == nil {
		x.err = x.sameLen("send buffer", 0)
	}
	if x.err != nil {
		return x.finish()
	}
	me := c.rank
	if rep {
		last := me // inclusive: ranks 0..me; exclusive: 0..me-1
		if exclusive {
			last = me - 1
		}
		if last >= 0 {
			x.fold(recv, op, last+1, 0, len(send))
		}
		return x.finish()
	}
	// Direct: each rank walks its chunk through every rank's prefix.
	lo, hi := x.chunk(len(send))
	bl := x.blockLen()
	sc := c.scratch(2, bl)
	for b := lo; b < hi; b += bl {
		e := min(hi, b+bl)
		acc, next := sc[0][:e-b], sc[1][:e-b]
		copy(acc, x.slots[0].a[b:e])
		if !exclusive {
			copy(x.slots[0].b[b:e], acc)
		}
		for i := 1; i < len(x.slots); i++ {
			sl := &x.slots[i]
			// next = acc ∘ x_i before rank i's output (maybe its input, in
			// place) is written.
			copy(next, acc)
			op(next, sl.a[b:e])
			if exclusive {
				copy(sl.b[b:e], acc)
			} else {
				copy(sl.b[b:e], next)
			}
			acc, next = next, acc
		}
	}
	return x.finish()
}

func (c *Comm) reduceScatterShm(send, recv []byte, t Type, op Op, local error) error {
	k := len(recv)
	inPlace := same(send, recv)
	if inPlace {
		k = len(recv) / c.size
	}
	sl := shmSlot{kind: kReduceScatter, t: t, n: len(send), a: send, err: local}
	rep := coll.Staged(coll.ReduceScatter, len(send), c.size) // each rank reduces only its block
	c.publish(&sl, send, rep)
	x, err := c.shmStart("reduce-scatter", &sl)
	if err != nil {
		return err
	}
	if x.err == nil {
		x.err = x.sameLen("send buffer", 0)
	}
	if x.err != nil {
		return x.finish()
	}
	lo := c.rank * k
	out := recv[:k]
	if inPlace && !rep {
		out = c.scratch(1, k)[0] // others still read recv (= send) until the gate
	}
	for b, bl := 0, x.blockLen(); b < k; b += bl {
		e := min(k, b+bl)
		x.fold(out[b:e], op, c.size, lo+b, lo+e)
	}
	err = x.finish()
	if inPlace && !rep && err == nil {
		copy(recv[:k], out)
	}
	return err
}
