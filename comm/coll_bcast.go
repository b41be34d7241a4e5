package comm

import "github.com/mpgo/mpgo/comm/internal/coll"

// Bcast broadcasts root's buf, elements of type t, into buf on every
// member. Every member must pass a buffer of the same length: a difference
// fails with an error wrapping [ErrTruncate].
//
// The root may return before the others have received: once they can
// read its data (a copy, for a small buf), as an MPI root returns once
// its message is buffered. A mismatch (length, type, root) then fails
// the others' calls, not the root's, as it does in the message-passing
// algorithms. The root's next collective on c waits for the others to
// have reached this one first.
func (c *Comm) Bcast(buf []byte, t Type, root int) error {
	const what = "bcast"
	if err := c.begin(what); err != nil {
		return err
	}
	defer c.leave()
	if err := checkType(what, t); err != nil {
		return err
	}
	if err := c.checkRoot(what, root); err != nil {
		return err
	}
	return c.bcast(buf, t, root, whole(what, "buffer", buf, t))
}

// bcast is Bcast past the checks that need no communication; with local
// non-nil it fails with it on this rank and makes the others fail too.
func (c *Comm) bcast(buf []byte, t Type, root int, local error) error {
	if c.size == 1 {
		return local
	}
	alg := c.pick(coll.Bcast, coll.Plain, len(buf))
	switch alg {
	case coll.SharedMemory:
		return c.bcastShm(buf, t, root, local)
	case coll.Hierarchical:
		return c.bcastHier(buf, t, root, local)
	}
	x := c.call("bcast", collSig{kind: kBcast, root: root, t: t, n: len(buf)}, nil, local)
	if c.takeShared(x, len(buf), true) { // a persistent one's (coll_nonblocking_shm.go)
		x.bcastShared(buf, root)
		return x.Result()
	}
	x.Bcast(buf, root, alg)
	return x.Result()
}

func (c *Comm) bcastShm(buf []byte, t Type, root int, local error) error {
	sl := shmSlot{kind: kBcast, root: root, t: t, n: len(buf), b: buf, err: local}
	leaves := false // the root, whose staged copy the others read: it need not wait for them (leave)
	if c.rank == root {
		staged := coll.Staged(coll.Bcast, len(buf), c.size)
		if !c.ep.Spins() { // the world's ranks outnumber its Ps
			staged = coll.StagedCrowded(coll.Bcast, len(buf), c.size)
		}
		c.publish(&sl, buf, staged)
		leaves = staged && local == nil
	}
	x, err := c.shmArrive("bcast", sl.sig(), &sl, nil)
	if err != nil {
		return err
	}
	if leaves && x.leave() {
		return nil
	}
	if err := x.await(); err != nil {
		return err
	}
	if x.err == nil {
		x.err = x.sameLen("buffer", root)
	}
	if x.err == nil && c.rank != root {
		copy(buf, x.slots[root].a)
	}
	return x.finish()
}
