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
// Nothing is packed in advance: a non-contiguous layout is sent with
// comm's SendFrom, its payload a layoutSource that gathers the elements
// when and where a receive wants them, and received with RecvInto through
// a layoutSink that scatters them. Between two ranks of one process the
// sink is handed the source itself and moves each element once, from the
// sender's places straight to the receiver's (transfer); a plain Recv gets
// the elements gathered straight into its buffer; a plain Send is
// scattered straight from the sender's slice (rendezvous) or its eager
// copy. Only a message that crosses processes is packed into bytes. The
// protocol is a plain Send's of the same length: below the eager limit the
// sender does not wait (its elements are gathered into an eager copy if
// the receive is not there yet), at or above it the sender waits until the
// receiver has read them. A layout that is one run (Contiguous, or a
// vector whose stride is its blocklength) goes as a plain Send or Recv of
// that run.

// SendLayout sends the elements of buf that l selects to rank dst with tag,
// in layout order, as one message of l.Count() elements. buf must be at
// least l.Extent() long, else SendLayout fails with an error wrapping
// [comm.ErrArg] and sends nothing. It returns once buf may be reused:
// like a plain [Comm.Send] of as many elements, at once below the eager
// limit, otherwise once the receiver has read the elements (from buf
// itself, when it is in this process). Other errors are those of
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
	s := newSource(buf, &l, c.t)
	err := c.c.SendFrom(s, l.count*c.size, c.t, dst, tag)
	s.free() // returned: the engine no longer refers to s
	return err
}

// IsendLayout starts [Comm.SendLayout]. As with [Comm.Isend], buf must
// not be modified until the request completes: at once below the eager
// limit, otherwise once the receiver has read the elements.
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
	s := newSource(buf, &l, c.t)
	r, err := c.c.IsendFrom(s, l.count*c.size, c.t, dst, tag)
	if err != nil {
		s.free()
		return nil, err
	}
	if _, done, _ := r.Test(); done {
		s.free()
	} // else the request owns s until it completes; the garbage collector reclaims it
	return r, nil
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
	k := newSink(buf, &l, c.t)
	st, err := c.c.RecvInto(k, c.t, src, tag)
	k.free() // returned: the engine no longer refers to k
	return st, err
}

// IrecvLayout starts [Comm.RecvLayout]. The elements land in buf by the
// time the request completes; buf must not be touched until then.
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
	k := newSink(buf, &l, c.t)
	r, err := c.c.IrecvInto(k, c.t, src, tag)
	if err != nil {
		k.free()
		return nil, err
	}
	return &LayoutRequest{r: r, k: k}, nil
}

// LayoutRequest is a layout receive in flight, started by
// [Comm.IrecvLayout]. Its methods are safe for concurrent use and, like
// [comm.Request]'s, may be called any number of times with the same result.
type LayoutRequest struct {
	r    *comm.Request
	k    *layoutSink // recycled once the receive completed; nil for a run
	once sync.Once
}

// Wait blocks until the message has arrived in the receive buffer and
// returns its status (Count in elements); errors are those of
// [Comm.RecvLayout].
func (q *LayoutRequest) Wait() (comm.Status, error) {
	st, err := q.r.Wait()
	q.finish()
	return st, err
}

// Test reports whether the receive has completed.
func (q *LayoutRequest) Test() (comm.Status, bool, error) {
	st, ok, err := q.r.Test()
	if ok {
		q.finish()
	}
	return st, ok, err
}

// Done returns a channel closed once the message has arrived, for select.
func (q *LayoutRequest) Done() <-chan struct{} { return q.r.Done() }

// Cancel cancels the receive if it has not matched a message yet; see
// [comm.Request.Cancel].
func (q *LayoutRequest) Cancel() error { return q.r.Cancel() }

// finish recycles the sink of a completed receive, once.
func (q *LayoutRequest) finish() {
	if q.k != nil {
		q.once.Do(q.k.free)
	}
}

// layoutSource is the payload of a layout message ([comm.Source]): the
// sender's slice and layout, read when a receive wants them. It is not
// generic, so that one pool serves every element type: elems points at
// the sender's slice, at least l.extent elements of type t, and ops are
// the generic code for that type.
type layoutSource struct {
	elems unsafe.Pointer
	t     comm.Type
	l     Layout
	ops   layoutOps
}

// layoutOps is the element type's code for layoutSource and layoutSink:
// elemOps[T], a value of no size, which an interface holds without
// allocating (a func value of a generic function's instantiation would
// be a closure allocated at each use).
type layoutOps interface {
	gather(s *layoutSource, dst []byte)
	take(k *layoutSink, data []byte, from comm.Remote, n int) error
}

type elemOps[T any] struct{}

func (elemOps[T]) gather(s *layoutSource, dst []byte) { gatherSource[T](s, dst) }

func (elemOps[T]) take(k *layoutSink, data []byte, from comm.Remote, n int) error {
	return takeSink[T](k, data, from, n)
}

var sources = sync.Pool{New: func() any { return new(layoutSource) }}

// newSource returns a pooled source for buf (checked against l).
func newSource[T any](buf []T, l *Layout, t comm.Type) *layoutSource {
	s := sources.Get().(*layoutSource)
	s.elems, s.t, s.l, s.ops = unsafe.Pointer(unsafe.SliceData(buf)), t, *l, elemOps[T]{}
	return s
}

// free recycles s, which nothing refers to any more.
func (s *layoutSource) free() {
	*s = layoutSource{} // let go of the sender's slice
	sources.Put(s)
}

// Pull implements [comm.Source]: the elements, packed, into dst; nothing
// to do when the receive dropped them.
func (s *layoutSource) Pull(dst []byte) error {
	if dst != nil {
		s.ops.gather(s, dst)
	}
	return nil
}

// gatherSource packs s's elements into dst, of exactly their size.
func gatherSource[T any](s *layoutSource, dst []byte) {
	src := unsafe.Slice((*T)(s.elems), s.l.extent)
	if aligned[T](dst) {
		walk(elemsOf[T](dst, s.l.count), src, &s.l, true)
		return
	}
	p := getPacked(len(dst)) // bytes of a foreign receive buffer: realign
	walk(elemsOf[T](p, s.l.count), src, &s.l, true)
	copy(dst, p)
	putPacked(p)
}

// layoutSink is the destination of a layout receive ([comm.Sink]): the
// receiver's slice and layout. Like layoutSource it is not generic: elems
// points at the receiver's slice of at least l.extent elements of type t
// (size bytes each), and ops are the generic code for that type.
type layoutSink struct {
	elems unsafe.Pointer
	t     comm.Type
	size  int
	l     Layout
	ops   layoutOps
}

var sinks = sync.Pool{New: func() any { return new(layoutSink) }}

// newSink returns a pooled sink for buf (checked against l).
func newSink[T any](buf []T, l *Layout, t comm.Type) *layoutSink {
	k := sinks.Get().(*layoutSink)
	k.elems, k.t, k.size, k.l, k.ops = unsafe.Pointer(unsafe.SliceData(buf)), t, int(unsafe.Sizeof(buf[0])), *l, elemOps[T]{}
	return k
}

// free recycles k, which nothing refers to any more.
func (k *layoutSink) free() {
	*k = layoutSink{} // let go of the receiver's slice
	sinks.Put(k)
}

// Cap implements [comm.Sink]: the layout's elements, in bytes.
func (k *layoutSink) Cap() int { return k.l.count * k.size }

// Take implements [comm.Sink].
func (k *layoutSink) Take(data []byte, from comm.Remote, n int) error {
	return k.ops.take(k, data, from, n)
}

// takeSink stores a payload of n bytes in k's places: straight from a
// local sender's layout when from is a layoutSource of the same element
// type (one pass), otherwise from bytes (data, or pulled from from).
func takeSink[T any](k *layoutSink, data []byte, from comm.Remote, n int) error {
	dst := unsafe.Slice((*T)(k.elems), k.l.extent)
	count := n / k.size
	if s, ok := from.(*layoutSource); ok && s.t == k.t {
		transfer(dst, &k.l, unsafe.Slice((*T)(s.elems), s.l.extent), &s.l, count)
		return nil
	}
	if from != nil || !aligned[T](data) {
		p := getPacked(n)
		var err error
		if from != nil {
			err = from.Pull(p)
		} else { // bytes from elsewhere (a foreign SendOwned of []byte): realign
			copy(p, data)
		}
		if err == nil {
			walk(elemsOf[T](p, count), dst, &k.l, false)
		}
		putPacked(p)
		return err
	}
	walk(elemsOf[T](data, count), dst, &k.l, false)
	return nil
}

// aligned reports whether b may be viewed as elements of T.
func aligned[T any](b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%unsafe.Alignof(*new(T)) == 0
}

func rankName(r int) string {
	if r == comm.AnySource {
		return "any rank"
	}
	return fmt.Sprintf("rank %d", r)
}

// elemsOf views the first n elements' worth of p, 8-byte aligned storage
// (from getPacked, or checked with aligned), as []T.
func elemsOf[T any](p []byte, n int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(p))), n)
}

// packPools recycles the scratch storage of the layout transfers that go
// through packed bytes (a payload pulled from another process before it is
// scattered, elements realigned for a foreign byte buffer), so that they
// allocate nothing in steady state. Pool c holds blocks of [2^c, 2^(c+1))
// bytes, 8-byte aligned, in boxes; emptyBoxes keeps the boxes while their
// blocks are out, so that neither Get nor Put allocates.
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

// putPacked recycles b, a block from getPacked. Small or unaligned blocks
// are left to the garbage collector.
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
