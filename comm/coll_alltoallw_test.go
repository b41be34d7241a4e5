package comm_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// alltoallwTypes is the element type of the block rank i sends rank j.
func alltoallwType(i, j int) comm.Type {
	return []comm.Type{comm.Byte, comm.Int16, comm.Float32, comm.Float64, comm.Complex128}[(i+2*j)%5]
}

// alltoallwBlock is the block rank i sends rank j: (i+j)%4 elements of
// its type, filled with bytes that name i, j and the position.
func alltoallwBlock(i, j int) []byte {
	b := make([]byte, (i+j)%4*alltoallwType(i, j).Size())
	for k := range b {
		b[k] = byte(i*31 + j*7 + k)
	}
	return b
}

// Every rank's receive buffer against the reference built from the
// blocks, on 1–17 and 64 ranks, with blocks of five types at unaligned,
// unordered byte displacements (a gap of 3 bytes after each block, the
// blocks laid out in reverse rank order).
func TestAlltoallw(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 64} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			run(t, n, alltoallwCheck)
		})
	}
}

// The same over processes: 2 processes of 2 ranks, joined by the
// in-memory loopback device, where the blocks travel as messages.
func TestAlltoallwProcs(t *testing.T) {
	for r, err := range runProcs(t, 2, 2, alltoallwCheck) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// alltoallwCheck runs an Alltoallw of alltoallwBlock's blocks and checks
// what w's rank received.
func alltoallwCheck(w *comm.Comm) error {
	n := w.Size()
	me := w.Rank()
	// layout places blocks in reverse rank order, 3 bytes apart
	layout := func(blk func(j int) []byte) (buf []byte, counts, displs []int, types []comm.Type) {
		counts, displs, types = make([]int, n), make([]int, n), make([]comm.Type, n)
		at := 0
		for j := n - 1; j >= 0; j-- {
			displs[j] = at
			at += len(blk(j)) + 3
		}
		return make([]byte, at), counts, displs, types
	}
	send, scounts, sdispls, stypes := layout(func(j int) []byte { return alltoallwBlock(me, j) })
	recv, rcounts, rdispls, rtypes := layout(func(i int) []byte { return alltoallwBlock(i, me) })
	for j := range n {
		b := alltoallwBlock(me, j)
		copy(send[sdispls[j]:], b)
		stypes[j] = alltoallwType(me, j)
		scounts[j] = len(b) / stypes[j].Size()
		rtypes[j] = alltoallwType(j, me)
		rcounts[j] = len(alltoallwBlock(j, me)) / rtypes[j].Size()
	}
	for k := range recv {
		recv[k] = 0xee
	}
	if err := w.Alltoallw(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes); err != nil {
		return err
	}
	want := bytes.Repeat([]byte{0xee}, len(recv))
	for i := range n {
		copy(want[rdispls[i]:], alltoallwBlock(i, me))
	}
	if !bytes.Equal(recv, want) {
		return fmt.Errorf("rank %d received\n%x\nwant\n%x", me, recv, want)
	}
	return nil
}

// A disagreement anywhere fails every rank with its class, and writes
// nothing: one rank's bad counts (ErrArg; an overflowing count among
// them), one pair's types (ErrType), one pair's lengths (ErrTruncate).
func TestAlltoallwMismatch(t *testing.T) {
	const n = 4
	for _, c := range []struct {
		name string
		want error
		// spoil changes rank me's arguments
		spoil func(me int, scounts, sdispls []int, stypes []comm.Type, rcounts []int, rtypes []comm.Type)
	}{
		{"negative count", comm.ErrArg, func(me int, sc, sd []int, st []comm.Type, rc []int, rt []comm.Type) {
			if me == 2 {
				sc[1] = -1
			}
		}},
		{"count overflows", comm.ErrArg, func(me int, sc, sd []int, st []comm.Type, rc []int, rt []comm.Type) {
			if me == 1 {
				sc[3], st[3] = 1<<61+1, comm.Float64
			}
		}},
		{"displacement overflows", comm.ErrArg, func(me int, sc, sd []int, st []comm.Type, rc []int, rt []comm.Type) {
			if me == 3 {
				sd[0] = 1 << 62
			}
		}},
		{"types differ", comm.ErrType, func(me int, sc, sd []int, st []comm.Type, rc []int, rt []comm.Type) {
			if me == 0 {
				rt[2] = comm.Int32
			}
		}},
		{"lengths differ", comm.ErrTruncate, func(me int, sc, sd []int, st []comm.Type, rc []int, rt []comm.Type) {
			if me == 1 {
				sc[2] = 1
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			errs := make([]error, n)
			run(t, n, func(w *comm.Comm) error {
				me := w.Rank()
				scounts, sdispls, stypes := make([]int, n), make([]int, n), make([]comm.Type, n)
				rcounts, rdispls, rtypes := make([]int, n), make([]int, n), make([]comm.Type, n)
				for j := range n {
					scounts[j], sdispls[j], stypes[j] = 2, 16*j, comm.Float64
					rcounts[j], rdispls[j], rtypes[j] = 2, 16*j, comm.Float64
				}
				c.spoil(me, scounts, sdispls, stypes, rcounts, rtypes)
				send, recv := make([]byte, 16*n), make([]byte, 16*n)
				for k := range send {
					send[k] = 1
				}
				err := w.Alltoallw(send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes)
				if !bytes.Equal(recv, make([]byte, 16*n)) {
					return fmt.Errorf("rank %d: the failed call wrote its receive buffer", me)
				}
				mu.Lock()
				errs[me] = err
				mu.Unlock()
				return nil
			})
			for r, err := range errs {
				if !errors.Is(err, c.want) {
					t.Errorf("rank %d: %v, want %v", r, err, c.want)
				}
			}
		})
	}
}

// A receive of Byte takes a block of any type, as a receive of Byte does.
func TestAlltoallwByteTakesAny(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		send := append(payload(8, uint64(w.Rank()+1)), payload(8, uint64(w.Rank()+1))...)
		recv := make([]byte, 16)
		err := w.Alltoallw(send, []int{1, 1}, []int{0, 8}, []comm.Type{comm.Float64, comm.Float64},
			recv, []int{8, 8}, []int{0, 8}, []comm.Type{comm.Byte, comm.Byte})
		if err != nil {
			return err
		}
		for i := range 2 {
			if got := val(recv[8*i:]); got != uint64(i+1) {
				return fmt.Errorf("rank %d: block from %d reads %d", w.Rank(), i, got)
			}
		}
		return nil
	})
}
