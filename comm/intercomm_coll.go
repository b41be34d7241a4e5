package comm

import "fmt"

// The collectives of an intercommunicator (MPI 3.1 §5.2.2): every rank of
// both groups calls them, and data crosses between the groups. They are
// built from the local group's own collectives (on the intercomm's private
// local communicator) and an exchange between the two leaders (local rank
// 0 of each group) on the intercomm's collective context. The leaders
// exchange a status word with the data, and each group learns its
// leader's outcome in a broadcast, so that an error on either side fails
// every rank of both groups instead of leaving some waiting.

// Root is the root argument of an intercommunicator's rooted collective
// at the root itself (MPI_ROOT): the other ranks of the root's group pass
// [ProcNull], and the ranks of the other group pass the root's rank in
// the root's group.
const Root = -4

// Tags of the intercommunicator collectives, on the intercomm's
// collective context (the range of agree.go's tags).
const (
	tagInterLeaders  = 205 // the leaders' exchange
	tagInterBcast    = 206 // Bcast: the root's buffer to the receiving group's leader
	tagInterAlltoall = 207 // Alltoall: the blocks between the groups
)

// Barrier returns once every rank of both groups has called it.
func (ic *Intercomm) Barrier() error {
	const what = "intercomm barrier"
	if ic == nil {
		return fmt.Errorf("comm: %s on a nil intercomm: %w", what, ErrArg)
	}
	if err := ic.enter(what); err != nil {
		return err
	}
	defer ic.leave()
	return ic.exchange(what, ic.local.Barrier(), nil, nil, Byte)
}

// Bcast broadcasts the root's buf to every rank of the other group: the
// root passes [Root], the other ranks of its group [ProcNull] (their buf
// is not used), and the ranks of the receiving group the root's rank in
// the root's group, receiving into buf (of the root's length).
func (ic *Intercomm) Bcast(buf []byte, t Type, root int) error {
	const what = "intercomm bcast"
	if ic == nil {
		return fmt.Errorf("comm: %s on a nil intercomm: %w", what, ErrArg)
	}
	if err := ic.enter(what); err != nil {
		return err
	}
	defer ic.leave()
	switch {
	case root == ProcNull:
		return nil
	case root == Root:
		if err := ic.local.usable(); err != nil {
			return fmt.Errorf("comm: %s: %w", what, err)
		}
		if err := checkType(what, t); err != nil {
			return err
		}
		if err := whole(what, "buffer", buf, t); err != nil {
			// The receiving leader waits for a message of t: an empty
			// one of bytes takes the data's place and fails it (and its
			// group) with ErrType, instead of leaving it waiting.
			ic.remote.coll().Send(nil, Byte, 0, tagInterBcast) //nolint:errcheck // err is the outcome
			return err
		}
		return ic.remote.coll().Send(buf, t, 0, tagInterBcast)
	case root < 0 || root >= ic.remote.size:
		return fmt.Errorf("comm: %s from rank %d of a remote group of %d: %w", what, root, ic.remote.size, ErrRank)
	}
	var got error
	if ic.local.rank == 0 {
		_, got = ic.remote.coll().Recv(buf, t, root, tagInterBcast)
	}
	return ic.spread(what, got, buf, t)
}

// Allreduce leaves in every rank's recv the reduction with op, in rank
// order, of the other group's send buffers (each group gets the other's
// result, as MPI defines it). send and recv hold the same number of
// elements on every rank of both groups.
func (ic *Intercomm) Allreduce(send, recv []byte, t Type, op Op) error {
	const what = "intercomm allreduce"
	if ic == nil {
		return fmt.Errorf("comm: %s on a nil intercomm: %w", what, ErrArg)
	}
	if err := ic.enter(what); err != nil {
		return err
	}
	defer ic.leave()
	mine := make([]byte, len(send))
	return ic.exchange(what, ic.local.Reduce(send, mine, t, op, 0), mine, recv, t)
}

// Allgather leaves in every rank's recv the send buffers of the other
// group's ranks, rank i's at block i: recv holds RemoteSize blocks of the
// remote ranks' send length.
func (ic *Intercomm) Allgather(send, recv []byte, t Type) error {
	const what = "intercomm allgather"
	if ic == nil {
		return fmt.Errorf("comm: %s on a nil intercomm: %w", what, ErrArg)
	}
	if err := ic.enter(what); err != nil {
		return err
	}
	defer ic.leave()
	var mine []byte
	if ic.local.rank == 0 {
		mine = make([]byte, ic.local.size*len(send))
	}
	return ic.exchange(what, ic.local.Gather(send, mine, t, 0), mine, recv, t)
}

// Alltoall sends block j of send (RemoteSize blocks) to rank j of the
// other group, which stores it at block i of its recv for sender i: recv
// holds RemoteSize blocks too.
func (ic *Intercomm) Alltoall(send, recv []byte, t Type) error {
	const what = "intercomm alltoall"
	if ic == nil {
		return fmt.Errorf("comm: %s on a nil intercomm: %w", what, ErrArg)
	}
	if err := ic.enter(what); err != nil {
		return err
	}
	defer ic.leave()
	n := ic.remote.size
	var local error
	sk, rk := len(send)/n, len(recv)/n
	switch {
	case len(send)%n != 0 || len(recv)%n != 0:
		local = fmt.Errorf("comm: %s: %d bytes to send and %d to receive are not %d blocks each: %w",
			what, len(send), len(recv), n, ErrArg)
	case !t.holds(sk) || !t.holds(rk):
		local = fmt.Errorf("comm: %s: blocks of %d bytes to send and %d to receive are not whole numbers of %v: %w",
			what, sk, rk, t, ErrArg)
	}
	rc := ic.remote.coll()
	reqs := make([]*Request, 0, 2*n)
	var first error
	for i := range n {
		r, err := rc.Irecv(recv[i*rk:(i+1)*rk], t, i, tagInterAlltoall)
		if err != nil {
			first = err
			break
		}
		reqs = append(reqs, r)
	}
	// Every block is sent, empty ones too when the buffers are bad, so
	// that no remote rank waits for a block that will not come.
	for j := range n {
		blk := send[j*sk : (j+1)*sk]
		if local != nil {
			blk = nil
		}
		r, err := rc.Isend(blk, t, j, tagInterAlltoall)
		if err != nil {
			first = cmpErr(first, err)
			continue
		}
		reqs = append(reqs, r)
	}
	for _, r := range reqs {
		if _, err := r.Wait(); err != nil {
			first = cmpErr(first, err)
		}
	}
	if local != nil {
		return local
	}
	if first != nil {
		return fmt.Errorf("comm: %s: %w", what, first)
	}
	return nil
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// exchange hands the local group's contribution mine (significant at the
// leader) to the other group, and the other group's into every local
// rank's recv (nil: nothing to receive): the leaders swap them with a
// status word each (local, the leader's failure so far, fails the other
// group too), then each leader broadcasts its outcome, and what it
// received, within its group. A rank's own local failure wins over the
// group's outcome.
func (ic *Intercomm) exchange(what string, local error, mine, recv []byte, t Type) error {
	var got error
	if ic.local.rank == 0 {
		got = ic.swap(what, local, mine, recv)
	}
	err := ic.spread(what, got, recv, t)
	if local != nil {
		return local
	}
	return err
}

// swap is the leaders' exchange: (status, mine) out, (status, theirs)
// into recv.
func (ic *Intercomm) swap(what string, local error, mine, recv []byte) error {
	rc := ic.remote.coll()
	out := append(putWords([]int64{errCode(local)}), mine...)
	in := make([]byte, 8+len(recv))
	st, err := rc.Sendrecv(out, Byte, 0, tagInterLeaders, in, Byte, 0, tagInterLeaders)
	switch {
	case err != nil:
		return fmt.Errorf("comm: %s: %w", what, err)
	case local != nil:
		return local
	case st.Count < 8:
		return fmt.Errorf("comm: %s: the remote leader sent %d bytes: %w", what, st.Count, ErrArg)
	}
	if code := getWords(in[:8])[0]; code != 0 {
		return fmt.Errorf("comm: %s: the remote group failed: %w", what, codeErr(code))
	}
	if st.Count != len(in) {
		return fmt.Errorf("comm: %s: the remote group sent %d bytes, %d expected: %w", what, st.Count-8, len(recv), ErrTruncate)
	}
	copy(recv, in[8:])
	return nil
}

// spread broadcasts the leader's outcome (got, significant at the leader)
// within the local group, then, when it succeeded, the buffer buf (nil:
// nothing). Every local rank returns the same outcome.
func (ic *Intercomm) spread(what string, got error, buf []byte, t Type) error {
	code := putWords([]int64{errCode(got)})
	if err := ic.local.Bcast(code, Byte, 0); err != nil {
		return fmt.Errorf("comm: %s: %w", what, err)
	}
	if c := getWords(code)[0]; c != 0 {
		if got != nil {
			return got
		}
		return fmt.Errorf("comm: %s: the group's leader failed: %w", what, codeErr(c))
	}
	if len(buf) == 0 {
		return nil
	}
	if err := ic.local.Bcast(buf, t, 0); err != nil {
		return fmt.Errorf("comm: %s: %w", what, err)
	}
	return nil
}
