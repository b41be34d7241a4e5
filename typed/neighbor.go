package typed

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// Neighborhood collectives (MPI 3.1 §7.6): each rank of a process topology
// ([comm.Cart], [comm.Graph], [comm.DistGraph]) exchanges data with its
// neighbors only. They are built on Isend and Irecv over the topology's
// neighborhood communicator, a context private to the topology, with the
// tags the topology assigns to each neighbor (see [comm.Topology]), so
// they never match user messages, and a rank that is a neighbor several
// times (a periodic ring of one or two ranks, a repeated graph edge) gets
// each block in its place. A [comm.ProcNull] neighbor moves nothing: its
// receive block is left as it was.
//
// Every rank of the topology must call the same collective with the same
// count per block; they are blocking, and may be called from one goroutine
// of a rank at a time.

// NeighborAllgather sends send to every out-neighbor and receives one
// block of len(send) elements from each in-neighbor, block j of recv from
// in-neighbor j in the topology's order (MPI_Neighbor_allgather). recv
// must hold exactly len(send) elements per in-neighbor ([comm.ErrArg]
// otherwise); a neighbor's block of another length fails with
// [comm.ErrTruncate] (longer) or comm.ErrArg (shorter).
func NeighborAllgather[T Number](t comm.Topology, send, recv []T) error {
	if t == nil {
		return fmt.Errorf("typed: neighbor allgather on a nil topology: %w", comm.ErrArg)
	}
	nc, in, out, err := t.Neighborhood()
	if err != nil {
		return fmt.Errorf("typed: neighbor allgather: %w", err)
	}
	k := len(send)
	if len(recv) != k*len(in) {
		return fmt.Errorf("typed: neighbor allgather: receive buffer of %d for %d in-neighbors of %d: %w",
			len(recv), len(in), k, comm.ErrArg)
	}
	sendAt := func(int) []T { return send }
	if err := exchange(Of[T](nc), in, out, k, recv, sendAt); err != nil {
		return fmt.Errorf("typed: neighbor allgather: %w", err)
	}
	return nil
}

// NeighborAlltoall sends block i of send to out-neighbor i and receives
// block j of recv from in-neighbor j (MPI_Neighbor_alltoall). The blocks
// are all of one length k: send holds k elements per out-neighbor and recv
// k per in-neighbor ([comm.ErrArg] otherwise); a neighbor's block of
// another length fails with [comm.ErrTruncate] (longer) or comm.ErrArg
// (shorter).
func NeighborAlltoall[T Number](t comm.Topology, send, recv []T) error {
	if t == nil {
		return fmt.Errorf("typed: neighbor alltoall on a nil topology: %w", comm.ErrArg)
	}
	nc, in, out, err := t.Neighborhood()
	if err != nil {
		return fmt.Errorf("typed: neighbor alltoall: %w", err)
	}
	var k int
	switch {
	case len(out) > 0:
		k = len(send) / len(out)
	case len(in) > 0:
		k = len(recv) / len(in)
	}
	if len(send) != k*len(out) || len(recv) != k*len(in) {
		return fmt.Errorf("typed: neighbor alltoall: buffers of %d and %d for %d out- and %d in-neighbors: %w",
			len(send), len(recv), len(out), len(in), comm.ErrArg)
	}
	sendAt := func(i int) []T { return send[i*k : (i+1)*k] }
	if err := exchange(Of[T](nc), in, out, k, recv, sendAt); err != nil {
		return fmt.Errorf("typed: neighbor alltoall: %w", err)
	}
	return nil
}

// exchange posts a receive of k elements into block j of recv for each
// in-neighbor, then sends sendAt(i) to each out-neighbor, and waits for
// all. Receives go first so that sends find them posted (one copy). On a
// failure to start an operation, the receives already posted are
// cancelled, and everything started is waited for before returning, so no
// request outlives the call.
func exchange[T Number](c *Comm[T], in, out []comm.Neighbor, k int, recv []T, sendAt func(int) []T) error {
	recvs := make([]*comm.Request, 0, len(in))
	sends := make([]*comm.Request, 0, len(out))
	var startErr error
	for j, nb := range in {
		if nb.Rank == comm.ProcNull {
			continue
		}
		r, err := c.Irecv(recv[j*k:(j+1)*k], nb.Rank, nb.Tag)
		if err != nil {
			startErr = err
			break
		}
		recvs = append(recvs, r)
	}
	if startErr == nil {
		for i, nb := range out {
			if nb.Rank == comm.ProcNull {
				continue
			}
			r, err := c.Isend(sendAt(i), nb.Rank, nb.Tag)
			if err != nil {
				startErr = err
				break
			}
			sends = append(sends, r)
		}
	}
	if startErr != nil {
		for _, r := range recvs {
			r.Cancel() // a receive that matched already completes as usual
		}
	}
	first := startErr
	for _, r := range recvs {
		st, err := r.Wait()
		if err == nil && st.Count != k {
			err = fmt.Errorf("block of %d elements from rank %d, want %d: %w", st.Count, st.Source, k, comm.ErrArg)
		}
		if first == nil && err != nil {
			first = err
		}
	}
	if err := comm.WaitAll(sends...); first == nil {
		first = err
	}
	return first
}
