package comm

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
)

// Segment is memory that the ranks of a communicator spanning processes
// of one host map together ([Comm.AllocShared]): each rank sees the same
// bytes, at an address of its own process. Its loads and stores are
// ordinary memory accesses, which the hardware orders across processes as
// it does between threads: sync/atomic on a word of it is atomic for
// every process. It lies outside the Go heap, where the race detector
// does not look.
type Segment struct {
	mem     []byte
	release func() error
	once    sync.Once
}

// Bytes returns the segment's memory; it must not be used after
// [Segment.Free].
func (s *Segment) Bytes() []byte { return s.mem }

// Free gives back the calling rank's use of the segment; the last rank
// of a process to free it unmaps it there. Not collective: the ranks
// agree among themselves that nobody still uses it (a barrier). A second
// Free does nothing.
func (s *Segment) Free() error {
	var err error
	s.once.Do(func() { err = s.release() })
	return err
}

// AllocShared makes a segment of size bytes, zero-filled, that every rank
// of c maps (the memory of MPI_Win_allocate_shared): collective, every
// rank calls it with the same size. Rank 0's process creates it and hands
// it to the other processes through the device that joins them (the
// shared-memory backend's authenticated connections); ranks of one
// process share one mapping.
//
// It needs c's ranks to run in more than one process, all on one host
// and joined by the shared-memory backend: a communicator spanning hosts,
// or processes that talk over TCP (MPGO_SHM=0), fails on every rank with
// an error wrapping [ErrNotSupported], as does one whose ranks all run in
// this process, which share its memory already. A size that is not
// positive or not the same everywhere fails with [ErrArg].
func (c *Comm) AllocShared(size int) (*Segment, error) {
	if err := c.collUsable("AllocShared"); err != nil {
		return nil, err
	}
	segs, process := c.ep.Segments(), c.ep.Process()
	ok, remote := size > 0, false
	var procs []int // the other processes of c's ranks, for rank 0
	for r := range c.size {
		wr := c.worldOf(r)
		if c.ep.IsLocal(wr) {
			continue
		}
		remote = true
		p := process(wr)
		if segs == nil || !segs.SharesMemory(p) {
			ok = false
		} else if !slices.Contains(procs, p) {
			procs = append(procs, p)
		}
	}
	if !remote {
		return nil, fmt.Errorf("comm: AllocShared on %s: its ranks all run in this process and share its memory already: %w", c, ErrNotSupported)
	}
	// Every rank's verdict and size, and rank 0's key.
	mine := make([]byte, 17)
	binary.NativeEndian.PutUint64(mine, uint64(size))
	binary.NativeEndian.PutUint64(mine[8:], rand.Uint64())
	if ok {
		mine[16] = 1
	}
	all := make([]byte, 17*c.size)
	if err := c.Allgather(mine, all, Byte); err != nil {
		return nil, fmt.Errorf("comm: AllocShared: %w", err)
	}
	key := binary.NativeEndian.Uint64(all[8:])
	for r := range c.size {
		v := all[17*r:]
		if got := int(binary.NativeEndian.Uint64(v)); got != size || size <= 0 {
			return nil, fmt.Errorf("comm: AllocShared of %d bytes on rank %d, of %d on rank %d: %w", size, c.rank, got, r, ErrArg)
		}
		if v[16] == 0 {
			return nil, fmt.Errorf("comm: AllocShared on %s: rank %d runs on another host than some rank of it, or its processes are not joined by the shared-memory backend (MPGO_SHM=0?): %w", c, r, ErrNotSupported)
		}
	}
	creator := process(c.worldOf(0))
	// Rank 0 creates and says whether it could; then the others attach
	// (the segment reached their process before the word did) and all
	// say whether they could.
	var mem []byte
	var err error
	word := []byte{1}
	if c.rank == 0 {
		if mem, err = segs.CreateSegment(key, size, procs); err != nil {
			word[0] = 0
		}
	}
	if e := c.Bcast(word, Byte, 0); e != nil {
		return nil, fmt.Errorf("comm: AllocShared: %w", e)
	}
	switch {
	case c.rank != 0 && word[0] == 0:
		err = fmt.Errorf("rank 0 could not create the segment: %w", ErrNotSupported)
	case c.rank != 0:
		mem, err = segs.AttachSegment(key, creator, size)
	}
	got := []byte{0}
	if err == nil {
		got[0] = 1
	}
	oks := make([]byte, c.size)
	if e := c.Allgather(got, oks, Byte); e != nil && err == nil {
		err = e
	}
	release := func() error { return segs.ReleaseSegment(key, creator) }
	for r, v := range oks {
		if v == 0 && err == nil {
			err = fmt.Errorf("rank %d could not map the segment: %w", r, ErrNotSupported)
		}
	}
	if err != nil {
		if mem != nil {
			_ = release()
		}
		return nil, fmt.Errorf("comm: AllocShared: %w", err)
	}
	return &Segment{mem: mem, release: release}, nil
}
