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
// of a rank at a time. A rank whose buffers, counts or displacements are
// bad fails with [comm.ErrArg] and still takes part, with empty blocks, so
// that its neighbours fail too (on a block of the wrong length) instead of
// waiting for it.

// NeighborAllgather sends send to every out-neighbor and receives one
// block of len(send) elements from each in-neighbor, block j of recv from
// in-neighbor j in the topology's order (MPI_Neighbor_allgather). recv
// must hold exactly len(send) elements per in-neighbor ([comm.ErrArg]
// otherwise); a neighbor's block of another length fails with
// [comm.ErrTruncate] (longer) or comm.ErrArg (shorter).
func NeighborAllgather[T any](t comm.Topology, send, recv []T) error {
	return planAllgather(t, send, recv).run()
}

// NeighborAlltoall sends block i of send to out-neighbor i and receives
// block j of recv from in-neighbor j (MPI_Neighbor_alltoall). The blocks
// are all of one length k: send holds k elements per out-neighbor and recv
// k per in-neighbor ([comm.ErrArg] otherwise); a neighbor's block of
// another length fails with [comm.ErrTruncate] (longer) or comm.ErrArg
// (shorter).
func NeighborAlltoall[T any](t comm.Topology, send, recv []T) error {
	return planAlltoall(t, send, recv).run()
}

// NeighborAllgatherv is NeighborAllgather with blocks of their own
// lengths (MPI_Neighbor_allgatherv): block j of recv, counts[j] elements
// at displs[j] (displs nil: packed in order), comes from in-neighbor j,
// which sends its whole send. A neighbor's block of another length than
// its count fails with [comm.ErrTruncate] (longer) or [comm.ErrArg]
// (shorter); counts and displacements that do not fit recv fail with
// comm.ErrArg.
func NeighborAllgatherv[T any](t comm.Topology, send, recv []T, counts, displs []int) error {
	return planAllgatherv(t, send, recv, counts, displs).run()
}

// NeighborAlltoallv is NeighborAlltoall with blocks of their own lengths
// (MPI_Neighbor_alltoallv): block i of send, scounts[i] elements at
// sdispls[i], goes to out-neighbor i, and block j of recv, rcounts[j]
// elements at rdispls[j], comes from in-neighbor j (displacements nil:
// packed in order). Lengths are checked as in NeighborAllgatherv.
func NeighborAlltoallv[T any](t comm.Topology, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	return planAlltoallv(t, send, scounts, sdispls, recv, rcounts, rdispls).run()
}

// The non-blocking forms (MPI_Ineighbor_allgather and kin) check their
// arguments at once (a bad topology fails the call; bad buffers, counts
// or displacements fail the request, after the exchange of empty blocks
// above) and run the exchange on a goroutine of its own
// (comm.Comm.Go), on a context private to the call (the neighbourhood
// communicator's Dup: every rank derives the same, as they call
// neighbourhood collectives in the same order), so that several in
// flight never meet. The buffers, counts and displacements belong to the
// operation until the request completes.

// IneighborAllgather starts a NeighborAllgather.
func IneighborAllgather[T any](t comm.Topology, send, recv []T) (*comm.Request, error) {
	return planAllgather(t, send, recv).start()
}

// IneighborAlltoall starts a NeighborAlltoall.
func IneighborAlltoall[T any](t comm.Topology, send, recv []T) (*comm.Request, error) {
	return planAlltoall(t, send, recv).start()
}

// IneighborAllgatherv starts a NeighborAllgatherv.
func IneighborAllgatherv[T any](t comm.Topology, send, recv []T, counts, displs []int) (*comm.Request, error) {
	return planAllgatherv(t, send, recv, counts, displs).start()
}

// IneighborAlltoallv starts a NeighborAlltoallv.
func IneighborAlltoallv[T any](t comm.Topology, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*comm.Request, error) {
	return planAlltoallv(t, send, scounts, sdispls, recv, rcounts, rdispls).start()
}

// The persistent forms (MPI_Neighbor_allgather_init and kin) check
// their arguments, derive their private context and make a persistent
// receive per in-neighbor and send per out-neighbor once; each start
// (comm.Comm.GoInit) starts them and waits for them, allocating nothing
// (with bad buffers, counts or displacements, each start exchanges empty
// blocks and fails, as above).

// NeighborAllgatherInit plans a persistent NeighborAllgather.
func NeighborAllgatherInit[T any](t comm.Topology, send, recv []T) (*comm.Request, error) {
	return planAllgather(t, send, recv).init()
}

// NeighborAlltoallInit plans a persistent NeighborAlltoall.
func NeighborAlltoallInit[T any](t comm.Topology, send, recv []T) (*comm.Request, error) {
	return planAlltoall(t, send, recv).init()
}

// NeighborAllgathervInit plans a persistent NeighborAllgatherv.
func NeighborAllgathervInit[T any](t comm.Topology, send, recv []T, counts, displs []int) (*comm.Request, error) {
	return planAllgatherv(t, send, recv, counts, displs).init()
}

// NeighborAlltoallvInit plans a persistent NeighborAlltoallv.
func NeighborAlltoallvInit[T any](t comm.Topology, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*comm.Request, error) {
	return planAlltoallv(t, send, scounts, sdispls, recv, rcounts, rdispls).init()
}

// neighborPlan is a neighbourhood collective with its arguments checked:
// what moves where, or why it cannot.
type neighborPlan[T any] struct {
	what           string
	err            error
	nc             *comm.Comm
	in, out        []comm.Neighbor
	recvAt, sendAt func(int) []T
}

// run exchanges the blocks. A plan whose buffers, counts or
// displacements are bad still exchanges, empty blocks both ways (its
// neighbours' blocks received into nothing, and dropped), so that its
// neighbours fail too, on blocks of the wrong length, instead of waiting
// for blocks that will not come; it returns its own error. Only a plan
// without a neighbourhood (a nil or freed topology, an inconsistent
// graph) does not exchange.
func (p *neighborPlan[T]) run() error {
	if p.err != nil {
		if p.nc != nil {
			none := func(int) []T { return nil }
			exchange(Of[T](p.nc), p.in, p.out, none, none) //nolint:errcheck // p.err is the outcome
		}
		return p.err
	}
	if err := exchange(Of[T](p.nc), p.in, p.out, p.recvAt, p.sendAt); err != nil {
		return fmt.Errorf("typed: %s: %w", p.what, err)
	}
	return nil
}

// start runs the exchange on a private context, on a goroutine of its
// own.
func (p *neighborPlan[T]) start() (*comm.Request, error) {
	q, err := p.private("i" + p.what)
	if err != nil {
		return nil, err
	}
	return p.nc.Go(q.run)
}

// init plans the exchange on a private context, run at each start: on
// requests made once (persistentExchange), where the arguments are good.
func (p *neighborPlan[T]) init() (*comm.Request, error) {
	q, err := p.private(p.what + " init")
	if err != nil {
		return nil, err
	}
	if q.err != nil {
		return p.nc.GoInit(q.run)
	}
	x, err := q.persistent()
	if err != nil {
		return nil, err
	}
	return p.nc.GoInit(x.run)
}

// private returns the plan on a context of its own (the neighbourhood
// communicator's Dup), named what. A plan with bad arguments gets one too
// and reports its error through the request (see run); only a plan with
// no neighbourhood fails at once.
func (p *neighborPlan[T]) private(what string) (*neighborPlan[T], error) {
	if p.nc == nil {
		return nil, p.err
	}
	nc, err := p.nc.Dup()
	if err != nil {
		return nil, fmt.Errorf("typed: %s: %w", what, err)
	}
	q := *p
	q.nc, q.what = nc, what
	return &q, nil
}

// neighborhood returns the plan's topology part, or a plan that fails.
func neighborhood[T any](what string, t comm.Topology) *neighborPlan[T] {
	p := &neighborPlan[T]{what: what}
	if t == nil {
		p.err = fmt.Errorf("typed: %s on a nil topology: %w", what, comm.ErrArg)
		return p
	}
	nc, in, out, err := t.Neighborhood()
	if err != nil {
		p.err = fmt.Errorf("typed: %s: %w", what, err)
		return p // no neighbourhood: nc stays nil, nothing is exchanged
	}
	p.nc, p.in, p.out = nc, in, out
	return p
}

func planAllgather[T any](t comm.Topology, send, recv []T) *neighborPlan[T] {
	p := neighborhood[T]("neighbor allgather", t)
	if p.err != nil {
		return p
	}
	k := len(send)
	if len(recv) != k*len(p.in) {
		p.err = fmt.Errorf("typed: neighbor allgather: receive buffer of %d for %d in-neighbors of %d: %w",
			len(recv), len(p.in), k, comm.ErrArg)
		return p
	}
	p.recvAt, p.sendAt = blocks(recv, k), func(int) []T { return send }
	return p
}

func planAlltoall[T any](t comm.Topology, send, recv []T) *neighborPlan[T] {
	p := neighborhood[T]("neighbor alltoall", t)
	if p.err != nil {
		return p
	}
	var k int
	switch {
	case len(p.out) > 0:
		k = len(send) / len(p.out)
	case len(p.in) > 0:
		k = len(recv) / len(p.in)
	}
	if len(send) != k*len(p.out) || len(recv) != k*len(p.in) {
		p.err = fmt.Errorf("typed: neighbor alltoall: buffers of %d and %d for %d out- and %d in-neighbors: %w",
			len(send), len(recv), len(p.out), len(p.in), comm.ErrArg)
		return p
	}
	p.recvAt, p.sendAt = blocks(recv, k), blocks(send, k)
	return p
}

func planAllgatherv[T any](t comm.Topology, send, recv []T, counts, displs []int) *neighborPlan[T] {
	p := neighborhood[T]("neighbor allgatherv", t)
	if p.err != nil {
		return p
	}
	recvAt, err := vblocks(recv, counts, displs, len(p.in))
	if err != nil {
		p.err = fmt.Errorf("typed: neighbor allgatherv: receive side: %w", err)
		return p
	}
	p.recvAt, p.sendAt = recvAt, func(int) []T { return send }
	return p
}

func planAlltoallv[T any](t comm.Topology, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) *neighborPlan[T] {
	p := neighborhood[T]("neighbor alltoallv", t)
	if p.err != nil {
		return p
	}
	sendAt, err := vblocks(send, scounts, sdispls, len(p.out))
	if err != nil {
		p.err = fmt.Errorf("typed: neighbor alltoallv: send side: %w", err)
		return p
	}
	recvAt, err := vblocks(recv, rcounts, rdispls, len(p.in))
	if err != nil {
		p.err = fmt.Errorf("typed: neighbor alltoallv: receive side: %w", err)
		return p
	}
	p.recvAt, p.sendAt = recvAt, sendAt
	return p
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
func exchange[T any](c *Comm[T], in, out []comm.Neighbor, recvAt, sendAt func(int) []T) error {
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
	return settle(recvs, want, sends, startErr)
}

// settle waits for an exchange's receives recvs (of want elements each)
// and sends, all started; startErr, when not nil, is why the exchange
// could not start the rest: the receives are cancelled first (one that
// matched already completes as usual). It returns the first error.
func settle(recvs []*comm.Request, want []int, sends []*comm.Request, startErr error) error {
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

// persistentExchange is exchange planned once (a persistent
// neighbourhood collective with good arguments): a persistent receive
// per in-neighbor and send per out-neighbor, made at init, which every
// start starts (receives first) and waits for, allocating nothing.
type persistentExchange struct {
	what         string
	recvs, sends []*comm.Request
	want         []int
}

// persistent returns p's exchange planned once, on p's communicator.
func (p *neighborPlan[T]) persistent() (*persistentExchange, error) {
	c := Of[T](p.nc)
	x := &persistentExchange{what: p.what}
	for j, nb := range p.in {
		if nb.Rank == comm.ProcNull {
			continue
		}
		b := p.recvAt(j)
		r, err := c.RecvInit(b, nb.Rank, nb.Tag)
		if err != nil {
			return nil, fmt.Errorf("typed: %s: %w", p.what, err)
		}
		x.recvs, x.want = append(x.recvs, r), append(x.want, len(b))
	}
	for i, nb := range p.out {
		if nb.Rank == comm.ProcNull {
			continue
		}
		r, err := c.SendInit(p.sendAt(i), nb.Rank, nb.Tag)
		if err != nil {
			return nil, fmt.Errorf("typed: %s: %w", p.what, err)
		}
		x.sends = append(x.sends, r)
	}
	return x, nil
}

// run is one start: as exchange, on the requests made once. A request
// that cannot start (the run aborted, the communicator was freed)
// completes with its error, inactive; the ones started before it are
// settled, so that every request is inactive for the next start.
func (x *persistentExchange) run() error {
	var startErr error
	recvs, sends := x.recvs, x.sends[:0]
	for j, r := range x.recvs {
		if err := r.Start(); err != nil {
			startErr, recvs = err, x.recvs[:j]
			break
		}
	}
	if startErr == nil {
		sends = x.sends
		for i, r := range x.sends {
			if err := r.Start(); err != nil {
				startErr, sends = err, x.sends[:i]
				break
			}
		}
	}
	if err := settle(recvs, x.want, sends, startErr); err != nil {
		return fmt.Errorf("typed: %s: %w", x.what, err)
	}
	return nil
}
