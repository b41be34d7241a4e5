package typed

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// AllocSharedWindow makes a window whose parts are one block of memory
// that every rank may also load and store directly
// (MPI_Win_allocate_shared): rank r's n elements follow rank r-1's, and
// [Window.SharedQuery] returns any rank's part. It returns the calling
// rank's part, zeroed. The ranks must share memory: all in this process
// (goroutine ranks), or in processes of one host that the shared-memory
// backend joins (mpiexec on one node; goroutine ranks of each process
// too), which map one segment that rank 0's process creates
// ([comm.Comm.AllocShared]: an anonymous memory file handed over the
// backend's authenticated connections, named nowhere, gone with the
// processes even after SIGKILL). There the window's operations go
// straight to memory as between goroutine ranks, with no handler: Put
// and Get copy, accumulates are atomic across processes (sync/atomic on
// the segment, or lock words in it for elements other than 4 or 8
// bytes). A communicator spanning hosts, or processes that talk over TCP
// (MPGO_SHM=0), fails with [comm.ErrNotSupported] on every rank. Direct
// loads and stores follow the epoch rules as the window's operations do.
// The memory is mapped outside the Go heap and given back by
// [Window.Free].
func AllocSharedWindow[T any](c *comm.Comm, n int) (*Window[T], []T, error) {
	if n < 0 {
		return nil, nil, fmt.Errorf("typed: AllocSharedWindow of %d elements: %w", n, comm.ErrArg)
	}
	w, err := newWindow[T](c, nil, n, nil, "AllocSharedWindow", true)
	if err != nil {
		return nil, nil, err
	}
	if w.seg != nil { // across processes: mapped by newWindow
		return w, w.sh.targets[w.rank].base, nil
	}
	if err := w.mapShared(); err != nil {
		if w.mem != nil {
			_ = unmapMem(w.mem)
		}
		_ = w.wc.Free()
		return nil, nil, fmt.Errorf("typed: AllocSharedWindow: %w", err)
	}
	return w, w.sh.targets[w.rank].base, nil
}

// mapShared has rank 0 map the parts of every rank, one after the other,
// and publishes them with a barrier. Every rank reaches the barrier, so a
// failure of rank 0 is everybody's.
func (w *Window[T]) mapShared() error {
	var failed error
	if w.rank == 0 {
		total := 0
		for r := range w.sh.targets {
			total += w.sh.targets[r].want
		}
		mem, all, err := mapElems[T](total)
		w.mem, failed = mem, err
		for r := 0; err == nil && r < len(w.sh.targets); r++ {
			tg := &w.sh.targets[r]
			tg.base = all[:tg.want:tg.want]
			all = all[tg.want:]
			tg.atomic = atomicElems(tg.base)
		}
	}
	if err := w.wc.Barrier(); err != nil {
		return err
	}
	// Mapped, rank 0's part is a slice of the mapping (empty, not nil).
	if failed == nil && w.sh.targets[0].base == nil {
		failed = fmt.Errorf("rank 0 could not map the window: %w", comm.ErrArg)
	}
	return failed
}

// SharedQuery returns rank r's part of the window (MPI_Win_shared_query),
// which the calling rank may load and store directly, under the epoch
// rules: after a Fence, say, rank 0 reads what rank 3 of another process
// stored in its part before it. Every window of [AllocSharedWindow]
// shares its memory so, in every process, and so does every window of
// ranks all in this process; a window across processes made otherwise
// ([NewWindow], [AllocWindow]) shares none and fails with
// [comm.ErrNotSupported].
func (w *Window[T]) SharedQuery(r int) ([]T, error) {
	if err := w.checkRank("SharedQuery", r); err != nil {
		return nil, err
	}
	if w.onHandlers() {
		return nil, fmt.Errorf("typed: Window.SharedQuery: a window across processes not made by AllocSharedWindow shares no memory: %w", comm.ErrNotSupported)
	}
	return w.sh.targets[r].base, nil
}
