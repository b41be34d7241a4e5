package comm

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// Tags on a communicator's collective context (ctx|1), which user messages
// never reach. Collectives are called in the same order by every member and
// messages between a pair are non-overtaking, so one tag per kind suffices.
const (
	tagSplit = 2
	tagBcast = 3
)

// childContext derives a child communicator's context from its parent's,
// the parent's creation count and the color: every member computes the same
// value without communicating, and distinct children get distinct contexts
// (a 64-bit mix; a collision between two live communicators with common
// members is astronomically unlikely). Bit 0 is kept clear for the
// collective context.
func childContext(parent uint64, seq uint32, color int) uint64 {
	x := parent ^ mix64(uint64(seq)<<32|uint64(uint32(color)))
	x = mix64(x) &^ 1
	if x < reservedContexts { // the world's, and the engine's control messages'
		x += reservedContexts
	}
	return x
}

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// coll returns c on its collective context.
func (c *Comm) coll() *Comm { return c.cc }

// Dup returns a new communicator with the same members and ranks and a
// context of its own. Every member must call it (in the same order with
// respect to Split and other Dups); it does not communicate.
func (c *Comm) Dup() (*Comm, error) {
	if err := c.begin("dup"); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	d := newComm(c.ep, childContext(c.ctx, c.kids, -1), c.rank, c.size, c.ranks,
		fmt.Sprintf("%s.dup%d", c, c.kids))
	c.linkNB(d)
	return d, nil
}

// Split partitions c: ranks that pass the same color form a new
// communicator, ordered by key (ties by rank in c). A rank passing
// [Undefined] takes part but gets nil, nil. Colors must be non-negative or
// Undefined. Every member must call it.
func (c *Comm) Split(color, key int) (*Comm, error) {
	if err := c.begin("split"); err != nil {
		return nil, err
	}
	defer c.leave()
	bad := color < 0 && color != Undefined
	if bad {
		color = -2 // still take part, so the others do not hang
	}
	c.kids++
	seq := c.kids
	table, err := c.allgatherInts([]int64{int64(color), int64(key)})
	if err != nil {
		return nil, fmt.Errorf("comm: split: %w", err)
	}
	if bad {
		return nil, fmt.Errorf("comm: split with color %d: %w", color, ErrArg)
	}
	if color == Undefined {
		return nil, nil
	}
	type member struct{ key, rank int }
	var ms []member
	for r := 0; r < c.size; r++ {
		if int(table[2*r]) == color {
			ms = append(ms, member{int(table[2*r+1]), r})
		}
	}
	slices.SortStableFunc(ms, func(a, b member) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.rank, b.rank))
	})
	ranks := make([]int, len(ms))
	rank := 0
	for i, m := range ms {
		ranks[i] = c.worldOf(m.rank)
		if m.rank == c.rank {
			rank = i
		}
	}
	d := newComm(c.ep, childContext(c.ctx, seq, color), rank, len(ms), ranks,
		fmt.Sprintf("%s.split%d(color %d)", c, seq, color))
	c.linkNB(d)
	return d, nil
}

// allgatherInts gathers every member's vals (all of the same length) on
// the collective context: a linear gather to rank 0, then a binomial-tree
// broadcast of the table. Returns the table, member-major.
func (c *Comm) allgatherInts(vals []int64) ([]int64, error) {
	cc := c.coll()
	k := len(vals)
	table := make([]byte, 8*k*c.size)
	mine := table[8*k*c.rank : 8*k*(c.rank+1)]
	for i, v := range vals {
		binary.LittleEndian.PutUint64(mine[8*i:], uint64(v))
	}
	if c.rank != 0 {
		if err := cc.Send(mine, Byte, 0, tagSplit); err != nil {
			return nil, err
		}
	} else {
		for r := 1; r < c.size; r++ {
			if _, err := cc.Recv(table[8*k*r:8*k*(r+1)], Byte, r, tagSplit); err != nil {
				return nil, err
			}
		}
	}
	if err := cc.bcastBytes(table, 0); err != nil {
		return nil, err
	}
	out := make([]int64, k*c.size)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(table[8*i:]))
	}
	return out, nil
}

// bcastBytes broadcasts buf from root along a binomial tree (as MPICH's
// MPIR_Bcast_binomial): c must be a collective-context communicator.
func (c *Comm) bcastBytes(buf []byte, root int) error {
	n := c.size
	vr := (c.rank - root + n) % n
	mask := 1
	for ; mask < n; mask <<= 1 {
		if vr&mask != 0 {
			src := (c.rank - mask + n) % n
			if _, err := c.Recv(buf, Byte, src, tagBcast); err != nil {
				return err
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < n {
			if err := c.Send(buf, Byte, (c.rank+mask)%n, tagBcast); err != nil {
				return err
			}
		}
	}
	return nil
}

// Barrier blocks until every member of c has called it. On members that
// share memory it is one gate (each rank parks once; the last arriver wakes
// all); otherwise the dissemination algorithm of Hensgen, Finkel and
// Manber: ⌈log2 n⌉ rounds of zero-byte messages, no root.
func (c *Comm) Barrier() error {
	return c.barrier()
}
