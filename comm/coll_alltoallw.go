package comm

import (
	"encoding/binary"
	"fmt"
)

// Alltoallw is Alltoallv with an element type of its own for every block
// and displacements in bytes (MPI_Alltoallw): scounts[j] elements of
// stypes[j] from byte sdispls[j] of send go to rank j, and rcounts[i]
// elements of rtypes[i] from rank i land at byte rdispls[i] of recv. A
// pair's blocks must agree, as MPI's type signatures must: the same type
// and the same number of bytes (a Byte block takes any type, as a receive
// of Byte does). It is how a code exchanges blocks of several types in one
// step, e.g. the columns of a struct-of-arrays.
//
// Every member fails alike when any disagrees: a rank's own argument
// error (counts, displacements or types; a count·size or an extent that
// overflows an int) fails every member with ErrArg, a pair whose types
// differ with ErrType, a pair whose byte counts differ with ErrTruncate,
// and nothing is written to recv then. The check costs two exchanges of
// 16 bytes per pair before the data moves.
func (c *Comm) Alltoallw(send []byte, scounts, sdispls []int, stypes []Type, recv []byte, rcounts, rdispls []int, rtypes []Type) error {
	return c.guarded("alltoallw", func() error {
		return c.alltoallTyped(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes)
	})
}

// alltoallTyped is Alltoallw, unguarded.
func (c *Comm) alltoallTyped(send []byte, scounts, sdispls []int, stypes []Type, recv []byte, rcounts, rdispls []int, rtypes []Type) error {
	const what = "alltoallw"
	if err := c.collUsable(what); err != nil {
		return err
	}
	n := c.size
	soff, scnt, local := checkBlocks(what, "send", scounts, sdispls, stypes, n, len(send))
	roff, rcnt, rerr := checkBlocks(what, "receive", rcounts, rdispls, rtypes, n, len(recv))
	if local == nil {
		local = rerr
	}
	if local == nil && !same(send, recv) && overlap(send, recv) {
		local = fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
	}

	// 1. Each pair's signatures: what i sends j, and what j takes from i.
	le := binary.LittleEndian
	out, in := alignedBytes(16*n), alignedBytes(16*n)
	for j := range n {
		code, size := int64(-1), int64(0) // -1: this rank's arguments are wrong
		if local == nil {
			code, size = stypes[j].ident(), int64(scnt[j])
		}
		le.PutUint64(out[16*j:], uint64(code))
		le.PutUint64(out[16*j+8:], uint64(size))
	}
	if err := c.alltoallBlocks(out, in, Int64); err != nil {
		return err
	}
	mine := local
	for i := 0; i < n && mine == nil; i++ {
		code, size := int64(le.Uint64(in[16*i:])), int(le.Uint64(in[16*i+8:]))
		switch {
		case code < 0:
			// rank i fails with ErrArg: its verdict below names it
		case code != rtypes[i].ident() && rtypes[i] != Byte:
			mine = fmt.Errorf("comm: %s: rank %d sends %v, rank %d receives %v: %w", what, i, identName(code), c.rank, rtypes[i], ErrType)
		case size != rcnt[i]:
			mine = fmt.Errorf("comm: %s: rank %d sends %d bytes, rank %d receives %d: %w", what, i, size, c.rank, rcnt[i], ErrTruncate)
		}
	}

	// 2. The verdict: every member fails with the lowest failing rank's
	// error class when any fails.
	code := errCode(mine)
	le.PutUint64(out[:8], uint64(code))
	if err := c.allgatherBlocks(out[:8], in[:8*n], Int64); err != nil {
		return err
	}
	for r := range n {
		if k := int64(le.Uint64(in[8*r:])); k != 0 {
			if r == c.rank {
				return mine
			}
			return fmt.Errorf("comm: %s: rank %d failed: %w", what, r, codeErr(k))
		}
	}

	// 3. The data, as bytes.
	return c.alltoall(what, kAlltoallv, send, soff, scnt, recv, roff, rcnt, Byte, nil)
}

// checkBlocks checks Alltoallw's blocks of one side (name) and returns
// their offsets and lengths in bytes.
func checkBlocks(what, name string, counts, displs []int, types []Type, n, blen int) (off, cnt []int, err error) {
	off, cnt = make([]int, n), make([]int, n)
	if len(counts) != n || len(displs) != n || len(types) != n {
		return off, cnt, fmt.Errorf("comm: %s: %s: %d counts, %d displacements and %d types for %d ranks: %w",
			what, name, len(counts), len(displs), len(types), n, ErrArg)
	}
	for i, k := range counts {
		t, d := types[i], displs[i]
		if err := checkType(what, t); err != nil {
			return make([]int, n), make([]int, n), err
		}
		m, ok := mulInt(k, t.Size())
		if k < 0 || d < 0 || !ok || d > blen || m > blen-d {
			return make([]int, n), make([]int, n), fmt.Errorf("comm: %s: %s: %d elements of %v at byte %d for rank %d do not fit a buffer of %d bytes: %w",
				what, name, k, t, d, i, blen, ErrArg)
		}
		off[i], cnt[i] = d, m
	}
	return off, cnt, nil
}
