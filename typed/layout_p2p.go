package typed

import (
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
)

// Point-to-point transfers through a [Layout].
//
// On the wire a layout message is an ordinary message of T: the selected
// elements packed in layout order. So the receiver may use any layout of
// the same count, or none (Recv of Count() elements), and a plain Send can
// be received through a layout.
//
// A non-contiguous layout is packed (one copy, a run at a time) into
// storage from packPools and handed over with SendOwned: the sender does not
// wait for the receiver, and the transfer itself copies nothing. The
// receiving side takes the message with RecvOwned, unpacks it (one copy)
// and puts the storage back into packPools, where the next send finds it:
// a stream of layout messages moves each element twice (pack, unpack), one
// copy fewer than packing around a plain Send and Recv, and allocates
// nothing in steady state. (Once the engine can let a receiver gather
// straight from the sender's buffer, one pass would do.) A layout that is one run (Contiguous, or a vector whose stride is
// its blocklength) goes as a plain Send or Recv of that run.

// SendLayout sends the elements of buf that l selects to rank dst with tag,
// packed in layout order into one message of l.Count() elements. buf must
// be at least l.Extent() long, else SendLayout fails with an error wrapping
// [comm.ErrArg] and sends nothing. It returns once buf may be reused;
// unlike a plain Send of a large message, it does not wait for the
// receiver: the packed copy travels on its own (MPI lets a standard send
// buffer, and this one does), so a sender that runs far ahead of its
// receiver holds that many packed copies. Other errors are those of
// [Comm.Send].
func (c *Comm[T]) SendLayout(buf []T, l Layout, dst, tag int) error {
	if len(buf) < l.extent {
		return fmt.Errorf("typed: send layout to rank %d tag %d: %d elements, layout extent %d: %w", dst, tag, len(buf), l.extent, comm.ErrArg)
	}
	if dst == comm.ProcNull {
		return c.c.Send(nil, c.t, dst, tag)
	}
	if off, n, ok := l.contiguousRun(); ok {
		return c.c.Send(bytesOf(buf[off:off+n]), c.t, dst, tag)
	}
	p := c.pack(buf, &l)
	if err := c.c.SendOwned(p, c.t, dst, tag); err != nil {
		// Whether it was handed over is not known; leave it to the
		// garbage collector rather than risk reusing it.
		return err
	}
	return nil
}

// IsendLayout starts [Comm.SendLayout]. As with [Comm.Isend], buf must
// not be modified until the request completes. A non-contiguous layout is
// packed before IsendLayout returns and the request completes once the
// packed message has been handed over (on one machine, at once); a layout
// that is one run is sent from buf itself.
func (c *Comm[T]) IsendLayout(buf []T, l Layout, dst, tag int) (*comm.Request, error) {
	if len(buf) < l.extent {
		return nil, fmt.Errorf("typed: isend layout to rank %d tag %d: %d elements, layout extent %d: %w", dst, tag, len(buf), l.extent, comm.ErrArg)
	}
	if dst == comm.ProcNull {
		return c.c.Isend(nil, c.t, dst, tag)
	}
	if off, n, ok := l.contiguousRun(); ok {
		return c.c.Isend(bytesOf(buf[off:off+n]), c.t, dst, tag)
	}
	return c.c.IsendOwned(c.pack(buf, &l), c.t, dst, tag)
}

// pack packs the elements of buf that l selects (l.count > 0, buf checked)
// into pooled storage and returns its bytes.
func (c *Comm[T]) pack(buf []T, l *Layout) []byte {
	p := getPacked(l.count * c.size)
	walk(elemsOf[T](p, l.count), buf, l, true)
	return p
}

// RecvLayout receives a message of T from src (or [comm.AnySource]) with tag
// (or [comm.AnyTag]) and unpacks its elements, in order, into the places of
// buf that l selects. Status.Count is the number of elements received: a
// shorter message fills the first Count places of the layout (as in MPI),
// a longer one fails with [comm.ErrTruncate], one of another element type
// with [comm.ErrType]; either way it is consumed. buf must be at least
// l.Extent() long and l must not select an element twice, else RecvLayout
// fails with an error wrapping [comm.ErrArg] before receiving anything.
func (c *Comm[T]) RecvLayout(buf []T, l Layout, src, tag int) (comm.Status, error) {
	if err := l.checkRecv(len(buf)); err != nil {
		return comm.Status{}, fmt.Errorf("typed: recv layout from %s tag %d: %w", rankName(src), tag, err)
	}
	if off, n, ok := l.contiguousRun(); ok {
		return c.c.Recv(bytesOf(buf[off:off+n]), c.t, src, tag)
	}
	p, st, err := c.c.RecvOwned(c.t, src, tag)
	if err != nil {
		return st, err
	}
	n := len(p) / c.size
	if n > l.count {
		putPacked(p)
		return st, fmt.Errorf("typed: recv layout from rank %d tag %d: message of %d elements, layout of %d: %w", st.Source, st.Tag, n, l.count, comm.ErrTruncate)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(p)))%unsafe.Alignof(buf[0]) == 0 {
		walk(elemsOf[T](p, n), buf, &l, false)
		putPacked(p)
	} else { // bytes from elsewhere (a foreign SendOwned of []byte): realign
		packed := make([]T, n)
		copy(bytesOf(packed), p)
		walk(packed, buf, &l, false)
	}
	st.Count = n
	return st, nil
}

// IrecvLayout starts [Comm.RecvLayout]. The message is received into
// pooled storage and unpacked into buf by the first [LayoutRequest.Wait] or
// successful [LayoutRequest.Test]: buf must not be touched until then.
func (c *Comm[T]) IrecvLayout(buf []T, l Layout, src, tag int) (*LayoutRequest, error) {
	if err := l.checkRecv(len(buf)); err != nil {
		return nil, fmt.Errorf("typed: irecv layout from %s tag %d: %w", rankName(src), tag, err)
	}
	if off, n, ok := l.contiguousRun(); ok {
		r, err := c.c.Irecv(bytesOf(buf[off:off+n]), c.t, src, tag)
		if err != nil {
			return nil, err
		}
		return &LayoutRequest{r: r}, nil
	}
	p := getPacked(l.count * c.size)
	r, err := c.c.Irecv(p, c.t, src, tag)
	if err != nil {
		putPacked(p)
		return nil, err
	}
	return &LayoutRequest{r: r, unpack: func(st comm.Status) {
		if st.Count > 0 {
			walk(elemsOf[T](p, st.Count), buf, &l, false)
		}
		putPacked(p)
	}}, nil
}

// LayoutRequest is a layout receive in flight, started by
// [Comm.IrecvLayout]. The message arrives into pooled storage; the first
// Wait, or Test that finds it complete, unpacks it into the receive buffer.
// Its methods are safe for concurrent use and, like [comm.Request]'s, may
// be called any number of times with the same result.
type LayoutRequest struct {
	r      *comm.Request
	unpack func(comm.Status) // nil for a layout received in place
	once   sync.Once
}

// Wait blocks until the message has arrived, unpacks it and returns its
// status (Count in elements); errors are those of [Comm.RecvLayout].
func (q *LayoutRequest) Wait() (comm.Status, error) {
	st, err := q.r.Wait()
	q.finish(st, err)
	return st, err
}

// Test reports whether the receive has completed, unpacking the message if
// it has.
func (q *LayoutRequest) Test() (comm.Status, bool, error) {
	st, ok, err := q.r.Test()
	if ok {
		q.finish(st, err)
	}
	return st, ok, err
}

// Done returns a channel closed once the message has arrived, for select;
// call Wait (which then returns at once) to unpack it.
func (q *LayoutRequest) Done() <-chan struct{} { return q.r.Done() }

// Cancel cancels the receive if it has not matched a message yet; see
// [comm.Request.Cancel].
func (q *LayoutRequest) Cancel() error { return q.r.Cancel() }

// finish unpacks a completed receive, once; after an error it only gives
// the storage back.
func (q *LayoutRequest) finish(st comm.Status, err error) {
	if q.unpack == nil {
		return
	}
	q.once.Do(func() {
		if err != nil {
			st.Count = 0
		}
		q.unpack(st)
	})
}

func rankName(r int) string {
	if r == comm.AnySource {
		return "any rank"
	}
	return fmt.Sprintf("rank %d", r)
}

// elemsOf views the first n elements' worth of p, storage from getPacked, as
// []T.
func elemsOf[T Number](p []byte, n int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(p))), n)
}

// packPools recycles the storage layout messages are packed into, so that
// steady-state layout transfers allocate nothing. Pool c holds blocks of
// [2^c, 2^(c+1)) bytes, 8-byte aligned, in boxes; emptyBoxes keeps the
// boxes while their blocks are out, so that neither Get nor Put allocates.
//
// Storage is memory of the Go heap rather than of a buffer.Pool because it
// is handed to the receiver with SendOwned, and a receiver that takes the
// message with a plain Recv drops it: the garbage collector must be able to
// reclaim it.
var (
	packPools  [bits.UintSize]sync.Pool // of *packedBox
	emptyBoxes sync.Pool                // of *packedBox with a nil block
)

type packedBox struct{ b []byte }

// minPacked is the smallest block worth recycling.
const minPacked = 64

// getPacked returns n > 0 bytes of 8-byte aligned storage, recycled if
// packPools has a block large enough.
func getPacked(n int) []byte {
	if n <= 0 {
		return nil
	}
	c := bits.Len(uint(n)) - 1 // 2^c ≤ n
	for _, k := range [2]int{c, c + 1} {
		if k >= len(packPools) {
			break
		}
		x, ok := packPools[k].Get().(*packedBox)
		if !ok {
			continue
		}
		if len(x.b) < n { // in the class, but too small: leave it for another
			packPools[k].Put(x)
			continue
		}
		b := x.b[:n]
		x.b = nil
		emptyBoxes.Put(x)
		return b
	}
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)[:n]
}

// putPacked recycles b, a block of our own or one received with RecvOwned
// (then the caller's to dispose of). Only b[:len(b)] is reused: whatever
// lies beyond it, in a slice handed over with SendOwned, may still be its
// sender's. Small or unaligned blocks are left to the garbage collector.
func putPacked(b []byte) {
	n := len(b)
	if n < minPacked || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		return
	}
	x, _ := emptyBoxes.Get().(*packedBox)
	if x == nil {
		x = new(packedBox)
	}
	x.b = b[:n:n]
	packPools[bits.Len(uint(n))-1].Put(x)
}
