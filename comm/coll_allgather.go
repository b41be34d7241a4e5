package comm

import "fmt"

// Allgather collects every member's send, elements of type t, into every
// member's recv, rank i's at block i (recv holds at least
// Size·len(send) bytes). In place, send and recv are the same slice and
// the caller's own block is already in place. Every member must send the
// same length.
func (c *Comm) Allgather(send, recv []byte, t Type) error {
	const what = "allgather"
	if err := c.checkRooted(what, t, 0); err != nil {
		return err
	}
	n, me := c.size, c.rank
	local := whole(what, "send buffer", send, t)
	inPlace := same(send, recv)
	if inPlace {
		if len(recv)%n != 0 && local == nil {
			local = fmt.Errorf("comm: %s in place: %d bytes is not %d blocks: %w", what, len(recv), n, ErrArg)
		}
		send = recv[me*(len(recv)/n) : (me+1)*(len(recv)/n)]
	}
	k := len(send)
	if local == nil && !inPlace {
		local = checkGathered(what, "receive", send, recv, n*k)
	}
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
	alg := c.pick(CollAllgather, func() Algorithm {
		if kind == kAllgather && len(send)*c.size < 80<<10 {
			return AlgBruck
		}
		return AlgRing
	})
	if alg == AlgSharedMemory {
		return c.allgatherShm(what, kind, send, recv, off, cnt, t, inPlace, local)
	}
	x := c.call(what, t, nil)
	if local != nil {
		x.fail(local)
	}
	if alg == AlgBruck && kind == kAllgather {
		x.allgatherBruck(send, recv, len(send))
		return x.result()
	}
	if !inPlace && len(send) == cnt[me] {
		copy(recv[off[me]:], send)
	}
	x.allgatherRing(recv, off, cnt)
	return x.result()
}

func (c *Comm) allgatherShm(what string, kind collKind, send, recv []byte, off, cnt []int, t Type, inPlace bool, local error) error {
	sl := shmSlot{kind: kind, t: t, a: send, err: local}
	c.publish(&sl, send, len(send) <= stageLimit)
	x, err := c.shmStart(what, sl)
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

// allgatherRing: with every rank's own block in place, n-1 steps pass each
// block one rank to the right (Chan et al.; MPICH's
// MPIR_Allgather_intra_ring, and Allgatherv's).
func (x *collCall) allgatherRing(recv []byte, off, cnt []int) {
	n, me := x.c.size, x.c.rank
	left, right := (me-1+n)%n, (me+1)%n
	for s := 0; s < n-1; s++ {
		sb, rb := (me-s+n)%n, (me-s-1+n)%n
		x.sendrecv(recv[off[sb]:off[sb]+cnt[sb]], right, tagAllgRing, recv[off[rb]:off[rb]+cnt[rb]], left, tagAllgRing)
	}
}

// allgatherBruck is Bruck et al.'s algorithm (MPICH's
// MPIR_Allgather_intra_brucks): ⌈log2 n⌉ steps, step j sending the
// 2^j blocks gathered so far to rank-2^j, in a buffer that starts with the
// caller's own block; a rotation puts the blocks in place at the end.
func (x *collCall) allgatherBruck(send, recv []byte, k int) {
	n, me := x.c.size, x.c.rank
	tmp := x.c.scratch(1, n*k)[0]
	copy(tmp, send)
	have := 1
	for p := 1; p < n; p <<= 1 {
		cnt := min(p, n-have)
		x.sendrecv(tmp[:cnt*k], (me-p+n)%n, tagAllgBruck, tmp[have*k:(have+cnt)*k], (me+p)%n, tagAllgBruck)
		have += cnt
	}
	// tmp[i] is the block of rank me+i.
	copy(recv[me*k:n*k], tmp[:(n-me)*k])
	copy(recv[:me*k], tmp[(n-me)*k:n*k])
}

// Alltoall sends block j of every member's send to rank j, which stores it
// at block i of its recv for sender i (MPI_Alltoall). send and recv have
// the same length, a multiple of Size; the same slice works in place.
// Every member must pass the same length.
func (c *Comm) Alltoall(send, recv []byte, t Type) error {
	const what = "alltoall"
	if err := c.checkRooted(what, t, 0); err != nil {
		return err
	}
	n := c.size
	local := whole(what, "send buffer", send, t)
	if local == nil {
		switch {
		case len(send) != len(recv):
			local = fmt.Errorf("comm: %s: send buffer of %d bytes, receive buffer of %d: %w", what, len(send), len(recv), ErrArg)
		case len(send)%n != 0:
			local = fmt.Errorf("comm: %s: %d bytes is not %d blocks: %w", what, len(send), n, ErrArg)
		case !same(send, recv) && overlap(send, recv):
			local = fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
		}
	}
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
	alg := c.pick(CollAlltoall, func() Algorithm {
		if kind == kAlltoall && scnt[0] <= 256 && c.size >= 8 {
			return AlgBruck
		}
		return AlgPairwise
	})
	if alg == AlgSharedMemory {
		return c.alltoallShm(what, kind, send, soff, scnt, recv, roff, rcnt, t, inPlace, local)
	}
	x := c.call(what, t, nil)
	if local != nil {
		x.fail(local)
	}
	if inPlace { // the sends read a copy
		tmp := alignedBytes(len(send)) // not scratch: the algorithms use that
		copy(tmp, send)
		send = tmp
	}
	if alg == AlgBruck && kind == kAlltoall {
		x.alltoallBruck(send, recv, scnt[0])
		return x.result()
	}
	if scnt[me] != rcnt[me] {
		x.fail(fmt.Errorf("comm: %s: sends %d bytes to itself, receives %d: %w", what, scnt[me], rcnt[me], ErrTruncate))
	} else {
		copy(recv[roff[me]:roff[me]+rcnt[me]], send[soff[me]:])
	}
	x.alltoallPairwise(send, soff, scnt, recv, roff, rcnt)
	return x.result()
}

func (c *Comm) alltoallShm(what string, kind collKind, send []byte, soff, scnt []int, recv []byte, roff, rcnt []int, t Type, inPlace bool, local error) error {
	sl := shmSlot{kind: kind, t: t, a: send, off: soff, cnt: scnt, err: local}
	c.publish(&sl, send, len(send) <= stageLimit || inPlace)
	x, err := c.shmStart(what, sl)
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
			copy(recv[roff[i]:roff[i]+rcnt[i]], sl.a[sl.off[me]:sl.off[me]+sl.cnt[me]])
		}
	}
	return x.finish()
}

// alltoallPairwise: in step i each rank sends to rank me+i and receives
// from rank me-i (MPICH's MPIR_Alltoall_intra_pairwise, Alltoallv's
// scattered variant in order).
func (x *collCall) alltoallPairwise(send []byte, soff, scnt []int, recv []byte, roff, rcnt []int) {
	n, me := x.c.size, x.c.rank
	for i := 1; i < n; i++ {
		dst, src := (me+i)%n, (me-i+n)%n
		x.sendrecv(send[soff[dst]:soff[dst]+scnt[dst]], dst, tagA2APair, recv[roff[src]:roff[src]+rcnt[src]], src, tagA2APair)
	}
}

// alltoallBruck is Bruck et al.'s alltoall (MPICH's
// MPIR_Alltoall_intra_brucks): after a local rotation, block i travels i
// ranks in ⌈log2 n⌉ steps, step j moving the blocks whose index has bit j
// to rank me+2^j; block i then holds rank me-i's data for the caller.
func (x *collCall) alltoallBruck(send, recv []byte, k int) {
	n, me := x.c.size, x.c.rank
	sc := x.c.scratch(3, n*k)
	tmp, pack, unpack := sc[0], sc[1], sc[2]
	copy(tmp, send[me*k:n*k])
	copy(tmp[(n-me)*k:], send[:me*k])
	for p := 1; p < n; p <<= 1 {
		m := 0
		for i := 0; i < n; i++ {
			if i&p != 0 {
				copy(pack[m*k:], tmp[i*k:(i+1)*k])
				m++
			}
		}
		x.sendrecv(pack[:m*k], (me+p)%n, tagA2ABruck, unpack[:m*k], (me-p+n)%n, tagA2ABruck)
		m = 0
		for i := 0; i < n; i++ {
			if i&p != 0 {
				copy(tmp[i*k:(i+1)*k], unpack[m*k:])
				m++
			}
		}
	}
	for j := 0; j < n; j++ {
		i := (me - j + n) % n
		copy(recv[j*k:(j+1)*k], tmp[i*k:(i+1)*k])
	}
}
