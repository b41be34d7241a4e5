package comm

import "fmt"

// The checks of collectives' arguments on their own (each member's,
// before any agreement between members), shared by the blocking forms and
// the non-blocking ones that complete in a table (coll_nonblocking_meet.go),
// so that both fail alike.

// reduceArgs checks a reduction's send (whole elements) and, where the
// caller gets the result (out), its recv (as long, not overlapping send
// unless the same).
func reduceArgs(what string, send, recv []byte, t Type, out bool) error {
	local := whole(what, "send buffer", send, t)
	if local == nil && out {
		local = checkInOut(what, send, recv)
	}
	return local
}

// allgatherArgs checks Allgather's arguments: it returns the caller's
// block (in place, its own block of recv), whether the call is in place,
// and the argument error, if any.
func (c *Comm) allgatherArgs(what string, send, recv []byte, t Type) (block []byte, inPlace bool, local error) {
	n, me := c.size, c.rank
	local = whole(what, "send buffer", send, t)
	inPlace = same(send, recv)
	if inPlace {
		if len(recv)%n != 0 && local == nil {
			local = fmt.Errorf("comm: %s in place: %d bytes is not %d blocks: %w", what, len(recv), n, ErrArg)
		}
		send = recv[me*(len(recv)/n) : (me+1)*(len(recv)/n)]
	}
	if local == nil && !inPlace {
		local = checkGathered(what, "receive", send, recv, n*len(send))
	}
	return send, inPlace, local
}

// gatherArgs checks Gather's arguments on their own: it returns the
// caller's block (in place, the root's own block of recv), whether the
// call is in place, and the argument error, if any. The root's are
// Allgather's; the others' recv is not read.
func (c *Comm) gatherArgs(what string, send, recv []byte, t Type, root int) (block []byte, inPlace bool, local error) {
	if c.rank != root {
		return send, false, whole(what, "send buffer", send, t)
	}
	return c.allgatherArgs(what, send, recv, t)
}

// alltoallArgs checks Alltoall's arguments.
func (c *Comm) alltoallArgs(what string, send, recv []byte, t Type) error {
	if local := whole(what, "send buffer", send, t); local != nil {
		return local
	}
	switch {
	case len(send) != len(recv):
		return fmt.Errorf("comm: %s: send buffer of %d bytes, receive buffer of %d: %w", what, len(send), len(recv), ErrArg)
	case len(send)%c.size != 0:
		return fmt.Errorf("comm: %s: %d bytes is not %d blocks: %w", what, len(send), c.size, ErrArg)
	case !same(send, recv) && overlap(send, recv):
		return fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
	}
	return nil
}

// scatterArgs checks Scatter's arguments: it returns the caller's block
// of recv (in place, the root's own block of send), whether the call is
// in place, and the argument error, if any.
func (c *Comm) scatterArgs(what string, send, recv []byte, t Type, root int) (block []byte, inPlace bool, local error) {
	n, me := c.size, c.rank
	local = whole(what, "receive buffer", recv, t)
	inPlace = me == root && same(send, recv)
	if me == root {
		switch {
		case len(send)%n != 0:
			if local == nil {
				local = fmt.Errorf("comm: %s: %d bytes to send is not %d blocks: %w", what, len(send), n, ErrArg)
			}
		case inPlace:
			recv = send[me*(len(send)/n) : (me+1)*(len(send)/n)]
		case local == nil:
			local = checkGathered(what, "send", recv, send, n*len(recv))
		}
	}
	return recv, inPlace, local
}

// reduceScatterArgs checks ReduceScatterBlock's arguments: it returns the
// block length in bytes and the argument error, if any.
func (c *Comm) reduceScatterArgs(what string, send, recv []byte, t Type) (k int, local error) {
	local = whole(what, "send buffer", send, t)
	k = len(recv)
	if same(send, recv) {
		if len(recv)%c.size != 0 && local == nil {
			local = fmt.Errorf("comm: %s in place: %d bytes is not %d blocks: %w", what, len(recv), c.size, ErrArg)
		}
		k = len(recv) / c.size
	} else if local == nil {
		switch {
		case len(send) != c.size*len(recv):
			local = fmt.Errorf("comm: %s: send buffer of %d bytes for %d blocks of %d: %w", what, len(send), c.size, len(recv), ErrArg)
		case overlap(send, recv):
			local = fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
		}
	}
	if local == nil && !t.holds(k) {
		local = fmt.Errorf("comm: %s: blocks of %d bytes are not a whole number of %v: %w", what, k, t, ErrArg)
	}
	return k, local
}
