package typed_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Shared windows across the processes of one host: the rank functions
// that TestWindowSharedProcs (processes played by worlds of this one,
// joined by the shared-memory backend) and TestWindowUnderMPIExec (real
// processes) run, against the goroutine tests' sequential references.

// sharedBodies are the rank functions of shared windows across processes.
func sharedBodies() []func(c *comm.Comm) error {
	shared := makers[2].make
	return []func(c *comm.Comm) error{
		sharedMapped,
		fencePutGet(shared),
		sharedDirect,
		sumBodyOn(typed.AllocSharedWindow[int64], int64(1), typed.Sum[int64], func(v int64) int { return int(v) }),
		sumBodyOn(typed.AllocSharedWindow[float64], 1.0, typed.Sum[float64], func(v float64) int { return int(v) }),
		sumBodyOn(typed.AllocSharedWindow[pair], pair{1, 1}, addPair, countPair),            // a user's op, by compare-and-swap
		sumBodyOn(typed.AllocSharedWindow[triple], triple{1, 2, 3}, addTriple, countTriple), // under the segment's lock words
		counterBodyOn(shared, 300),
		func(c *comm.Comm) error { return casMutexOn(c, shared) },
		passiveShared,
		tripleHammer,
	}
}

// tripleHammer: every rank accumulates into one 12-byte element of rank
// 0's part many times, so that updates from different processes meet
// under the segment's lock word: none may be lost or torn.
func tripleHammer(c *comm.Comm) error {
	const reps = 5000
	w, part, err := typed.AllocSharedWindow[triple](c, 1)
	if err != nil {
		return err
	}
	if err := w.LockAll(); err != nil {
		return err
	}
	for range reps {
		if err := w.Accumulate([]triple{{1, 2, 3}}, 0, 0, addTriple); err != nil {
			return err
		}
	}
	if err := w.UnlockAll(); err != nil {
		return err
	}
	if err := w.Fence(); err != nil {
		return err
	}
	if got, want := countTriple(part[0]), reps*c.Size(); c.Rank() == 0 && got != want {
		return fmt.Errorf("%d ranks: %d accumulates counted (%v), want %d", c.Size(), got, part[0], want)
	}
	if err := w.Fence(); err != nil {
		return err
	}
	return w.Free()
}

// sharedDirect: parts of different lengths, one after the other in one
// block; each rank stores into its own part and, after a Fence, loads
// every other rank's through SharedQuery, then stores into its
// successor's part directly and finds its predecessor's store in its own
// after the next Fence.
func sharedDirect(c *comm.Comm) error {
	n, me := c.Size(), c.Rank()
	w, part, err := typed.AllocSharedWindow[int32](c, me%3+1)
	if err != nil {
		return err
	}
	if len(part) != me%3+1 {
		return fmt.Errorf("rank %d: part of %d elements, want %d", me, len(part), me%3+1)
	}
	for i := range part {
		if part[i] != 0 {
			return fmt.Errorf("rank %d: element %d of a new window is %d", me, i, part[i])
		}
		part[i] = int32(1000*me + i)
	}
	if err := w.Fence(); err != nil {
		return err
	}
	var prev []int32
	for r := range n {
		p, err := w.SharedQuery(r)
		if err != nil {
			return err
		}
		if len(p) != r%3+1 {
			return fmt.Errorf("rank %d: rank %d's part has %d elements, want %d", me, r, len(p), r%3+1)
		}
		for i, v := range p {
			if v != int32(1000*r+i) {
				return fmt.Errorf("rank %d: rank %d's element %d is %d, want %d", me, r, i, v, 1000*r+i)
			}
		}
		if prev != nil && unsafe.Pointer(unsafe.SliceData(p)) != unsafe.Add(unsafe.Pointer(unsafe.SliceData(prev)), 4*len(prev)) {
			return fmt.Errorf("rank %d: rank %d's part does not follow rank %d's", me, r, r-1)
		}
		prev = p
	}
	next, err := w.SharedQuery((me + 1) % n)
	if err != nil {
		return err
	}
	if err := w.Fence(); err != nil { // everybody read before anybody writes
		return err
	}
	next[0] = int32(-1 - me)
	if err := w.Fence(); err != nil {
		return err
	}
	if want := int32(-1 - (me+n-1)%n); part[0] != want {
		return fmt.Errorf("rank %d: element 0 is %d after the predecessor's store, want %d", me, part[0], want)
	}
	return w.Free()
}

// passiveShared: every rank takes rank 0's part exclusively and adds to
// it with a plain load and store through SharedQuery, which the lock
// keeps apart from the others'.
func passiveShared(c *comm.Comm) error {
	const reps = 20
	w, part, err := typed.AllocSharedWindow[int64](c, 1)
	if err != nil {
		return err
	}
	p0, err := w.SharedQuery(0)
	if err != nil {
		return err
	}
	for range reps {
		if err := w.Lock(0, true); err != nil {
			return err
		}
		p0[0]++
		if err := w.Unlock(0); err != nil {
			return err
		}
	}
	if err := w.Fence(); err != nil {
		return err
	}
	if c.Rank() == 0 && part[0] != int64(reps*c.Size()) {
		return fmt.Errorf("%d ranks: %d increments under exclusive locks, want %d", c.Size(), part[0], reps*c.Size())
	}
	if err := w.Fence(); err != nil {
		return err
	}
	return w.Free()
}

// segmentMappings counts this process's mappings of shared windows'
// segments, and fails on one with a name in a file system (a memory
// file's is /memfd:NAME (deleted)).
func segmentMappings() (int, error) {
	procMu.Lock()
	defer procMu.Unlock()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	k := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "mpgo-shm-win") {
			continue
		}
		if !strings.HasSuffix(line, "/memfd:mpgo-shm-win (deleted)") {
			return 0, fmt.Errorf("a window's segment mapped with a name: %s", line)
		}
		k++
	}
	return k, sc.Err()
}

// openFiles counts this process's open descriptors.
func openFiles() (int, error) {
	procMu.Lock()
	defer procMu.Unlock()
	es, err := os.ReadDir("/proc/self/fd")
	return len(es), err
}

// procMu lets one rank of the process at a time read /proc/self: each
// reading opens a descriptor, which another's openFiles would count.
var procMu sync.Mutex

// sharedMapped: a shared window's segment is mapped in each process while
// the window lives, by no name, and unmapped by Free on every process;
// no descriptor stays open, however many windows come and go.
func sharedMapped(c *comm.Comm) error {
	if err := c.Barrier(); err != nil {
		return err
	}
	before, err := segmentMappings()
	if err != nil {
		return err
	}
	fds, err := openFiles()
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	for range 20 {
		w, _, err := typed.AllocSharedWindow[int32](c, 100)
		if err != nil {
			return err
		}
		if err := w.Free(); err != nil {
			return err
		}
	}
	w, _, err := typed.AllocSharedWindow[byte](c, 1<<20)
	if err != nil {
		return err
	}
	during, err := segmentMappings()
	if err != nil {
		return err
	}
	if during <= before {
		return fmt.Errorf("rank %d: %d segment mappings with a window, %d before", c.Rank(), during, before)
	}
	if err := w.Free(); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	after, err := segmentMappings()
	if err != nil {
		return err
	}
	if after != before {
		return fmt.Errorf("rank %d: %d segment mappings after Free, %d before", c.Rank(), after, before)
	}
	if now, err := openFiles(); err != nil || now != fds {
		return fmt.Errorf("rank %d: %d descriptors open after 21 windows, %d before (%v)", c.Rank(), now, fds, err)
	}
	return c.Barrier()
}

// sharedRefused: where the processes share no memory, AllocSharedWindow
// fails on every rank with ErrNotSupported, and the communicator stays
// usable.
func sharedRefused(c *comm.Comm) error {
	if _, _, err := typed.AllocSharedWindow[int64](c, 4); !errors.Is(err, comm.ErrNotSupported) {
		return fmt.Errorf("rank %d: a shared window across processes without shared memory: %v, want ErrNotSupported", c.Rank(), err)
	}
	return c.Barrier()
}
