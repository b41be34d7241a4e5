package main

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// collectives are the operations the collective benchmarks time, with the
// shapes of typed.Comm's methods (byte messages; float32 reductions with
// MPI_SUM, as OSU's MPI_FLOAT).
type collectives struct {
	bcast     func(buf []byte, root int) error
	reduce    func(send, recv []float32, op typed.Op[float32], root int) error
	allreduce func(send, recv []float32, op typed.Op[float32]) error
	allgather func(send, recv []byte) error
	alltoall  func(send, recv []byte) error
}

// The optional methods of typed.Comm, found by type assertion so that
// mpbench builds and runs before (and after) mpgo has them: when typed.Comm
// gains a method of this shape, mpbench times it with no change here.
type (
	bcaster[T typed.Number] interface{ Bcast(buf []T, root int) error }
	reducer[T typed.Number] interface {
		Reduce(send, recv []T, op typed.Op[T], root int) error
	}
	allreducer[T typed.Number] interface {
		Allreduce(send, recv []T, op typed.Op[T]) error
	}
	allgatherer[T typed.Number] interface{ Allgather(send, recv []T) error }
	alltoaller[T typed.Number]  interface{ Alltoall(send, recv []T) error }
)

// findCollectives returns mpgo's collectives on w where typed.Comm has
// them, and point-to-point stand-ins (on a duplicate of w) where it does
// not. Every rank of w must call it.
func findCollectives(w *comm.Comm) (collectives, error) {
	var cs collectives
	b, f := any(typed.Of[byte](w)), any(typed.Of[float32](w))
	own, err := w.Dup()
	if err != nil {
		return cs, fmt.Errorf("mpbench: duplicating the communicator: %w", err)
	}
	pb, pf := &p2pColl[byte]{c: typed.Of[byte](own)}, &p2pColl[float32]{c: typed.Of[float32](own)}
	if m, ok := b.(bcaster[byte]); ok {
		cs.bcast = m.Bcast
	} else {
		cs.bcast = pb.Bcast
	}
	if m, ok := f.(reducer[float32]); ok {
		cs.reduce = m.Reduce
	} else {
		cs.reduce = pf.Reduce
	}
	if m, ok := f.(allreducer[float32]); ok {
		cs.allreduce = m.Allreduce
	} else {
		cs.allreduce = pf.Allreduce
	}
	if m, ok := b.(allgatherer[byte]); ok {
		cs.allgather = m.Allgather
	} else {
		cs.allgather = pb.Allgather
	}
	if m, ok := b.(alltoaller[byte]); ok {
		cs.alltoall = m.Alltoall
	} else {
		cs.alltoall = pb.Alltoall
	}
	return cs, nil
}

// collectiveSource says, for a benchmark's header, whose implementation of
// its operation is timed.
func collectiveSource(b *benchmark) string {
	op := map[string]string{"bcast": "Bcast", "reduce": "Reduce", "allreduce": "Allreduce",
		"allgather": "Allgather", "alltoall": "Alltoall"}[b.name]
	if op == "" {
		if b.name == "barrier" {
			return "comm.Comm.Barrier"
		}
		return ""
	}
	for _, f := range missingCollectives() {
		if f == op {
			return "mpbench's point-to-point " + op + " (typed.Comm has no " + op + " yet)"
		}
	}
	return "typed.Comm." + op
}

// missingCollectives lists the collectives typed.Comm lacks.
func missingCollectives() []string {
	var miss []string
	b, f := any((*typed.Comm[byte])(nil)), any((*typed.Comm[float32])(nil))
	if _, ok := b.(bcaster[byte]); !ok {
		miss = append(miss, "Bcast")
	}
	if _, ok := f.(reducer[float32]); !ok {
		miss = append(miss, "Reduce")
	}
	if _, ok := f.(allreducer[float32]); !ok {
		miss = append(miss, "Allreduce")
	}
	if _, ok := b.(allgatherer[byte]); !ok {
		miss = append(miss, "Allgather")
	}
	if _, ok := b.(alltoaller[byte]); !ok {
		miss = append(miss, "Alltoall")
	}
	return miss
}

// p2pColl is the stand-in for collectives that typed.Comm lacks: the
// classic point-to-point algorithms (binomial tree broadcast and reduce,
// ring allgather, pairwise-exchange alltoall), over a communicator of its
// own so that its messages never meet the benchmark's. Not safe for
// concurrent use.
type p2pColl[T typed.Number] struct {
	c        *typed.Comm[T]
	acc, tmp []T // reduce's partial result and incoming block
}

const tagColl = 0

// Bcast sends root's buf to every rank down a binomial tree: ⌈log2 n⌉
// rounds, the relative rank's lowest set bit naming its parent.
func (p *p2pColl[T]) Bcast(buf []T, root int) error {
	n, rel := p.c.Size(), (p.c.Rank()-root+p.c.Size())%p.c.Size()
	mask := 1
	for ; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			if _, err := p.c.Recv(buf, (rel-mask+root)%n, tagColl); err != nil {
				return err
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < n {
			if err := p.c.Send(buf, (rel+mask+root)%n, tagColl); err != nil {
				return err
			}
		}
	}
	return nil
}

// Reduce combines every rank's send into root's recv up a binomial tree
// (op must be commutative, as typed.Sum is).
func (p *p2pColl[T]) Reduce(send, recv []T, op typed.Op[T], root int) error {
	n, rel := p.c.Size(), (p.c.Rank()-root+p.c.Size())%p.c.Size()
	if cap(p.acc) < len(send) {
		p.acc, p.tmp = make([]T, len(send)), make([]T, len(send))
	}
	acc, tmp := p.acc[:len(send)], p.tmp[:len(send)]
	copy(acc, send)
	for mask := 1; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			return p.c.Send(acc, (rel-mask+root)%n, tagColl)
		}
		if rel|mask < n {
			if _, err := p.c.Recv(tmp, ((rel|mask)+root)%n, tagColl); err != nil {
				return err
			}
			op(acc, tmp)
		}
	}
	copy(recv, acc)
	return nil
}

// Allreduce is Reduce to rank 0 followed by Bcast.
func (p *p2pColl[T]) Allreduce(send, recv []T, op typed.Op[T]) error {
	if err := p.Reduce(send, recv, op, 0); err != nil {
		return err
	}
	return p.Bcast(recv, 0)
}

// Allgather passes the blocks around a ring: n-1 steps, each rank sending
// to its right the block it received last.
func (p *p2pColl[T]) Allgather(send, recv []T) error {
	n, r, k := p.c.Size(), p.c.Rank(), len(send)
	copy(recv[r*k:(r+1)*k], send)
	right, left := (r+1)%n, (r-1+n)%n
	for step := 0; step < n-1; step++ {
		out, in := (r-step+n)%n, (r-step-1+n)%n
		if _, err := p.c.Sendrecv(recv[out*k:(out+1)*k], right, tagColl, recv[in*k:(in+1)*k], left, tagColl); err != nil {
			return err
		}
	}
	return nil
}

// Alltoall exchanges blocks pairwise: at step s, rank r sends its block for
// r+s and receives the block from r-s.
func (p *p2pColl[T]) Alltoall(send, recv []T) error {
	n, r := p.c.Size(), p.c.Rank()
	k := len(send) / n
	copy(recv[r*k:(r+1)*k], send[r*k:(r+1)*k])
	for s := 1; s < n; s++ {
		dst, src := (r+s)%n, (r-s+n)%n
		if _, err := p.c.Sendrecv(send[dst*k:(dst+1)*k], dst, tagColl, recv[src*k:(src+1)*k], src, tagColl); err != nil {
			return err
		}
	}
	return nil
}
