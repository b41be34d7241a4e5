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
	if err := exchange(Of[T](nc), in, out, blocks(recv, k), sendAt); err != nil {
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
	if err := exchange(Of[T](nc), in, out, blocks(recv, k), blocks(send, k)); err != nil {
		return fmt.Errorf("typed: neighbor alltoall: %w", err)
	}
	return nil
}

// NeighborAllgatherv is NeighborAllgather with blocks of their own
// lengths (MPI_Neighbor_allgatherv): block j of recv, counts[j] elements
// at displs[j] (displs nil: packed in order), comes from in-neighbor j,
// which sends its whole send. A neighbor's block of another length than
// its count fails with [comm.ErrTruncate] (longer) or [comm.ErrArg]
// (shorter); counts and displacements that do not fit recv fail with
// comm.ErrArg.
func NeighborAllgatherv[T Number](t comm.Topology, send, recv []T, counts, displs []int) error {
	if t == nil {
		return fmt.Errorf("typed: neighbor allgatherv on a nil topology: %w", comm.ErrArg)
	}
	nc, in, out, err := t.Neighborhood()
	if err != nil {
		return fmt.Errorf("typed: neighbor allgatherv: %w", err)
	}
	recvAt, err := vblocks(recv, counts, displs, len(in))
	if err != nil {
		return fmt.Errorf("typed: neighbor allgatherv: receive side: %w", err)
	}
	if err := exchange(Of[T](nc), in, out, recvAt, func(int) []T { return send }); err != nil {
		return fmt.Errorf("typed: neighbor allgatherv: %w", err)
	}
	return nil
}

// NeighborAlltoallv is NeighborAlltoall with blocks of their own lengths
// (MPI_Neighbor_alltoallv): block i of send, scounts[i] elements at
// sdispls[i], goes to out-neighbor i, and block j of recv, rcounts[j]
// elements at rdispls[j], comes from in-neighbor j (displacements nil:
// packed in order). Lengths are checked as in NeighborAllgatherv.
func NeighborAlltoallv[T Number](t comm.Topology, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	if t == nil {
		return fmt.Errorf("typed: neighbor alltoallv on a nil topology: %w", comm.ErrArg)
	}
	nc, in, out, err := t.Neighborhood()
	if err != nil {
		return fmt.Errorf("typed: neighbor alltoallv: %w", err)
	}
	sendAt, err := vblocks(send, scounts, sdispls, len(out))
	if err != nil {
		return fmt.Errorf("typed: neighbor alltoallv: send side: %w", err)
	}
	recvAt, err := vblocks(recv, rcounts, rdispls, len(in))
	if err != nil {
		return fmt.Errorf("typed: neighbor alltoallv: receive side: %w", err)
	}
	if err := exchange(Of[T](nc), in, out, recvAt, sendAt); err != nil {
		return fmt.Errorf("typed: neighbor alltoallv: %w", err)
	}
	return nil
}

// blocks returns block i of buf, in blocks of k elements.
func blocks[T any](buf []T, k int) func(int) []T {
	return func(i int) []T { return buf[i*k : (i+1)*k] }
}

// vblocks checks that n blocks of counts[i] elements at displs[i] (nil:
// packed) fit buf and returns block i of them. The counts and
// displacements are not copied: they must not change during the call.
func vblocks[T any](buf []T, counts, displs []int, n int) (func(int) []T, error) {
	if len(counts) != n || displs != nil && len(displs) != n {
		return nil, fmt.Errorf("%d counts and %d displacements for %d neighbors: %w", len(counts), len(displs), n, comm.ErrArg)
	}
	off := make([]int, n)
	next := 0
	for i, k := range counts {
		if displs != nil {
			next = displs[i]
		}
		if k < 0 || next < 0 || next > len(buf) || k > len(buf)-next {
			return nil, fmt.Errorf("block %d of %d elements at %d, in a buffer of %d: %w", i, k, next, len(buf), comm.ErrArg)
		}
		off[i] = next
		next += k
	}
	return func(i int) []T { return buf[off[i] : off[i]+counts[i]] }, nil
}

// exchange posts a receive into recvAt(j) for each in-neighbor j, then
// sends sendAt(i) to each out-neighbor i, and waits for all; a block that
// arrives with another length than its receive's fails. Receives go first
// so that sends find them posted (one copy). On a failure to start an
// operation, the receives already posted are cancelled, and everything
// started is waited for before returning, so no request outlives the
// call.
func exchange[T Number](c *Comm[T], in, out []comm.Neighbor, recvAt, sendAt func(int) []T) error {
	recvs := make([]*comm.Request, 0, len(in))
	want := make([]int, 0, len(in))
	sends := make([]*comm.Request, 0, len(out))
	var startErr error
	for j, nb := range in {
		if nb.Rank == comm.ProcNull {
			continue
		}
		b := recvAt(j)
		r, err := c.Irecv(b, nb.Rank, nb.Tag)
		if err != nil {
			startErr = err
			break
		}
		recvs = append(recvs, r)
		want = append(want, len(b))
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
	for j, r := range recvs {
		st, err := r.Wait()
		if err == nil && st.Count != want[j] {
			err = fmt.Errorf("block of %d elements from rank %d, want %d: %w", st.Count, st.Source, want[j], comm.ErrArg)
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
