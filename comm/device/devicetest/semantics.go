// Package devicetest checks backends against the boundary of package
// device, as testing/fstest checks file systems.
//
// [Semantics] is the suite that any world of two or more ranks must pass,
// whatever backend carries its messages: matching order, wildcards,
// truncation and type errors, every protocol size, windows of Isends,
// communicators, collectives, values and matched probes. [TestBackend] is a backend's
// whole conformance test: that suite on jobs of several shapes, and the
// failure semantics (a process that finishes early, one that dies), over
// jobs that the backend's [Harness] plays. [Run] plays the processes of a
// job as worlds of one process joined by a backend's devices, and
// [Loopback] is an in-memory device written against package device alone,
// the model of a new backend. Every backend runs TestBackend: the engine
// over Loopback (this package's tests), the TCP and RDMA backends over
// their own devices in process; cmd/mpcheck runs Semantics under a real
// launcher (mpiexec -n 4).
package devicetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"time"

	"github.com/mpgo/mpgo/comm"
)

// Semantics runs the suite on w, a world communicator of at least two
// ranks; every rank calls it. It returns the first failure.
func Semantics(w *comm.Comm) error {
	if w.Size() < 2 {
		return fmt.Errorf("devicetest: a world of %d ranks, want at least 2", w.Size())
	}
	for _, step := range []struct {
		name string
		fn   func(*comm.Comm) error
	}{
		{"ring", Ring},
		{"wildcard order", WildcardOrder},
		{"truncation and types", Truncation},
		{"struct types", StructTypes},
		{"rendezvous sizes", Sizes},
		{"window of Isends", Window},
		{"barrier and split", BarrierSplit},
		{"collectives", Collectives},
		{"persistent collectives", PersistentCollectives},
		{"values", Values},
		{"matched probe", MatchedProbe},
	} {
		if err := step.fn(w); err != nil {
			return fmt.Errorf("devicetest: %s: rank %d: %w", step.name, w.Rank(), err)
		}
		// The steps use wildcards: keep one step's messages out of the next.
		if err := w.Barrier(); err != nil {
			return fmt.Errorf("devicetest: barrier after %s: rank %d: %w", step.name, w.Rank(), err)
		}
	}
	return nil
}

// payload returns n bytes whose first 8 (when there is room) hold v and
// the rest a pattern derived from v.
func payload(n int, v uint64) []byte {
	b := make([]byte, n)
	var head [8]byte
	binary.LittleEndian.PutUint64(head[:], v)
	copy(b, head[:])
	for i := 8; i < n; i++ {
		b[i] = byte(v) + byte(i*7)
	}
	return b
}

func check(got []byte, n int, v uint64) error {
	if want := payload(n, v); !bytes.Equal(got[:n], want) {
		return fmt.Errorf("payload of %d bytes for message %d differs", n, v)
	}
	return nil
}

// Ring passes a small and a large message around the ring of all ranks.
func Ring(w *comm.Comm) error {
	n, me := w.Size(), w.Rank()
	next, prev := (me+1)%n, (me+n-1)%n
	for _, size := range []int{8, 200 << 10} {
		in := make([]byte, size)
		st, err := w.Sendrecv(payload(size, uint64(me)), comm.Byte, next, 1, in, comm.Byte, prev, 1)
		if err != nil {
			return err
		}
		if st.Source != prev || st.Count != size {
			return fmt.Errorf("status %+v, want source %d count %d", st, prev, size)
		}
		if err := check(in, size, uint64(prev)); err != nil {
			return err
		}
	}
	return nil
}

// WildcardOrder: every other rank sends rank 0 a stream of eager,
// rendezvous and synchronous messages; rank 0 takes them with AnySource
// and AnyTag and checks each sender's stream arrives whole and in order.
func WildcardOrder(w *comm.Comm) error {
	const count = 24
	sizes := []int{8, 100 << 10, 16, 0}
	if w.Rank() != 0 {
		for i := range count {
			size := sizes[i%len(sizes)]
			buf := payload(max(size, 8), uint64(w.Rank()*1000+i))[:size]
			var err error
			if i%4 == 2 {
				err = w.Ssend(buf, comm.Byte, 0, i%3)
			} else {
				err = w.Send(buf, comm.Byte, 0, i%3)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	next := make([]int, w.Size())
	buf := make([]byte, 100<<10)
	for range count * (w.Size() - 1) {
		st, err := w.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag)
		if err != nil {
			return err
		}
		i := next[st.Source]
		next[st.Source]++
		size := sizes[i%len(sizes)]
		if st.Tag != i%3 || st.Count != size {
			return fmt.Errorf("message %d from %d: tag %d count %d, want tag %d count %d", i, st.Source, st.Tag, st.Count, i%3, size)
		}
		if size >= 8 {
			if err := check(buf, size, uint64(st.Source*1000+i)); err != nil {
				return fmt.Errorf("from %d: %w", st.Source, err)
			}
		}
	}
	return nil
}

// Truncation: a receive buffer too short fails with ErrTruncate and
// consumes the message; a different element type fails with ErrType;
// the next message is intact; Probe sees a waiting message's size.
func Truncation(w *comm.Comm) error {
	last := w.Size() - 1
	switch w.Rank() {
	case last:
		for i, size := range []int{100, 300 << 10} {
			if err := w.Send(payload(size, uint64(i)), comm.Byte, 0, 5); err != nil {
				return err
			}
		}
		if err := w.Send(make([]byte, 16), comm.Float64, 0, 6); err != nil {
			return err
		}
		if err := w.Send(make([]byte, 200<<10), comm.Float64, 0, 6); err != nil {
			return err
		}
		return w.Send(payload(64, 9), comm.Byte, 0, 7)
	case 0:
		for _, size := range []int{100, 300 << 10} {
			st, err := w.Probe(last, 5)
			if err != nil || st.Count != size {
				return fmt.Errorf("probe: %+v %v, want count %d", st, err, size)
			}
			if _, err := w.Recv(make([]byte, 10), comm.Byte, last, 5); !errors.Is(err, comm.ErrTruncate) {
				return fmt.Errorf("receive of %d bytes into 10: %v, want ErrTruncate", size, err)
			}
		}
		for range 2 {
			if _, err := w.Recv(make([]byte, 200<<10), comm.Int64, last, 6); !errors.Is(err, comm.ErrType) {
				return fmt.Errorf("float64 received as int64: %v, want ErrType", err)
			}
		}
		buf := make([]byte, 64)
		if _, err := w.Recv(buf, comm.Byte, last, 7); err != nil {
			return err
		}
		return check(buf, 64, 9)
	}
	return nil
}

// StructTypes: a struct element type's layout crosses the device. The
// last rank sends rank 0 messages of a struct type, eager and rendezvous,
// before rank 0's process uses the type (when it is another process: its
// first receive of the type comes after the messages). A receive of
// another layout, or of a number type of the same size, fails with
// ErrType and consumes the message; one of another Go type of the same
// layout, or of bytes, gets the elements (Count in elements, or in bytes).
// Then an Allreduce where the last rank passes another layout fails with
// ErrType on every rank, and one of the same layout under other names on
// some ranks succeeds.
func StructTypes(w *comm.Comm) error {
	type particle struct {
		X, Y, Z float64
		ID      int32
		Kind    uint8
	}
	type sameLayout struct {
		A, B, C float64
		N       int32
		K       uint8
	}
	type otherLayout struct {
		N       int32
		K       uint8
		A, B, C float64
	}
	const esz = 32
	last := w.Size() - 1
	counts := []int{3, 300 << 10 / esz}
	if w.Rank() == last {
		pt, err := comm.TypeOf(reflect.TypeFor[particle]())
		if err != nil {
			return err
		}
		var sends []*comm.Request
		for i, k := range counts {
			for j := range 4 {
				r, err := w.Isend(payload(k*esz, uint64(10*i+j)), pt, 0, 40+i)
				if err != nil {
					return err
				}
				sends = append(sends, r)
			}
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if err := comm.WaitAll(sends...); err != nil {
			return err
		}
	} else if err := w.Barrier(); err != nil {
		return err
	}
	var types [3]comm.Type
	for i, t := range []reflect.Type{reflect.TypeFor[particle](), reflect.TypeFor[sameLayout](), reflect.TypeFor[otherLayout]()} {
		var err error
		if types[i], err = comm.TypeOf(t); err != nil {
			return err
		}
	}
	pt, same, other := types[0], types[1], types[2]
	if w.Rank() == 0 {
		for i, k := range counts {
			buf := make([]byte, k*esz)
			if _, err := w.Recv(buf, other, last, 40+i); !errors.Is(err, comm.ErrType) {
				return fmt.Errorf("particles received as another layout: %v, want ErrType", err)
			}
			if _, err := w.Recv(buf, comm.Complex128, last, 40+i); !errors.Is(err, comm.ErrType) {
				return fmt.Errorf("particles received as complex128: %v, want ErrType", err)
			}
			st, err := w.Recv(buf, same, last, 40+i)
			if err != nil || st.Count != k {
				return fmt.Errorf("particles received as the same layout: %+v %v, want count %d", st, err, k)
			}
			if err := check(buf, k*esz, uint64(10*i+2)); err != nil {
				return err
			}
			if st, err = w.Recv(buf, comm.Byte, last, 40+i); err != nil || st.Count != k*esz {
				return fmt.Errorf("particles received as bytes: %+v %v", st, err)
			}
			if err := check(buf, k*esz, uint64(10*i+3)); err != nil {
				return err
			}
		}
	}
	x, sum := make([]byte, 2*esz), make([]byte, 2*esz)
	t := pt
	if w.Rank() == last {
		t = other
	}
	if err := w.Allreduce(x, sum, t, sumInt64); !errors.Is(err, comm.ErrType) {
		return fmt.Errorf("allreduce of another layout on rank %d: %v, want ErrType", last, err)
	}
	if w.Rank()%2 == 1 {
		t = same
	} else {
		t = pt
	}
	binary.LittleEndian.PutUint64(x, 1)
	if err := w.Allreduce(x, sum, t, sumInt64); err != nil {
		return fmt.Errorf("allreduce of one layout under two names: %w", err)
	}
	if got := binary.LittleEndian.Uint64(sum); got != uint64(w.Size()) {
		return fmt.Errorf("allreduce of one layout under two names: %d, want %d", got, w.Size())
	}
	return structNumbering(w)
}

// structNumbering: processes number the struct layouts they use in the
// order they first use them, so one layout may have different codes in
// different processes (here, those of odd and even ranks register two in
// opposite orders); the collectives that compare their ranks' types as
// values (a non-blocking collective's agreement on its arguments, and
// Alltoallw's on each pair's) compare layouts, not codes.
func structNumbering(w *comm.Comm) error {
	type first struct {
		A int32
		B float32
	}
	type second struct {
		A float32
		B int32
	}
	order := []reflect.Type{reflect.TypeFor[first](), reflect.TypeFor[second]()}
	if w.Rank()%2 == 1 {
		order[0], order[1] = order[1], order[0]
	}
	var ft comm.Type
	for _, t := range order {
		typ, err := comm.TypeOf(t)
		if err != nil {
			return err
		}
		if t == reflect.TypeFor[first]() {
			ft = typ
		}
	}
	n := w.Size()
	x, sum := make([]byte, 16), make([]byte, 16)
	binary.LittleEndian.PutUint64(x, 1)
	r, err := w.Iallreduce(x, sum, ft, sumInt64)
	if err == nil {
		_, err = r.Wait()
	}
	if err != nil || binary.LittleEndian.Uint64(sum) != uint64(n) {
		return fmt.Errorf("iallreduce of one struct type: %d, %v; want %d", binary.LittleEndian.Uint64(sum), err, n)
	}
	counts, displs, types := make([]int, n), make([]int, n), make([]comm.Type, n)
	for i := range n {
		counts[i], displs[i], types[i] = 1, 8*i, ft
	}
	send, recv := payload(8*n, uint64(w.Rank())), make([]byte, 8*n)
	if err := w.Alltoallw(send, counts, displs, types, recv, counts, displs, types); err != nil {
		return fmt.Errorf("alltoallw of one struct type: %w", err)
	}
	for i := range n {
		if want := payload(8*n, uint64(i))[8*w.Rank():][:8]; !bytes.Equal(recv[8*i:][:8], want) {
			return fmt.Errorf("alltoallw of one struct type: block %d differs", i)
		}
	}
	return nil
}

// Sizes: every rank sends every size to the next rank and receives from
// the previous one, non-blocking, around the eager limit and far above.
func Sizes(w *comm.Comm) error {
	n, me := w.Size(), w.Rank()
	next, prev := (me+1)%n, (me+n-1)%n
	sizes := []int{0, 1, 4 << 10, 64<<10 - 1, 64 << 10, 1<<20 + 3, 4 << 20}
	var reqs []*comm.Request
	bufs := make([][]byte, len(sizes))
	for i, size := range sizes {
		bufs[i] = make([]byte, size)
		r, err := w.Irecv(bufs[i], comm.Byte, prev, 10+i)
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	for i, size := range sizes {
		r, err := w.Isend(payload(size, uint64(me*100+i)), comm.Byte, next, 10+i)
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	if err := comm.WaitAll(reqs...); err != nil {
		return err
	}
	for i, size := range sizes {
		if err := check(bufs[i], size, uint64(prev*100+i)); err != nil {
			return err
		}
	}
	return nil
}

// MatchedProbe: every rank sends its successor messages of every
// protocol size on one tag at once (Isend), and receives its
// predecessor's by matched probes, sizing each buffer by its probe:
// alternately Mprobe with Mrecv, and Improbe with Imrecv. (Matched probes
// are for ranks whose goroutines share a communicator; the suite keeps
// to one goroutine a rank, which the deadlock detector understands.)
func MatchedProbe(w *comm.Comm) error {
	n, me := w.Size(), w.Rank()
	next, prev := (me+1)%n, (me+n-1)%n
	sizes := []int{0, 1, 4 << 10, 64 << 10, 1<<20 + 3}
	var sends []*comm.Request
	for i, size := range sizes {
		r, err := w.Isend(payload(size, uint64(me*100+i)), comm.Byte, next, 30)
		if err != nil {
			return err
		}
		sends = append(sends, r)
	}
	for i, size := range sizes {
		var (
			m   *comm.Message
			st  comm.Status
			err error
		)
		if i%2 == 0 {
			m, st, err = w.Mprobe(prev, 30)
		} else {
			for ok := false; !ok && err == nil; {
				if m, st, ok, err = w.Improbe(prev, 30); !ok {
					runtime.Gosched() // the sender may need this P
				}
			}
		}
		if err != nil {
			return err
		}
		if st.Count != size || st.Source != prev {
			return fmt.Errorf("message %d: probed %+v, want %d bytes from %d", i, st, size, prev)
		}
		buf := make([]byte, st.Count)
		var rst comm.Status
		if i%2 == 0 {
			rst, err = w.Mrecv(m, buf, comm.Byte)
		} else {
			var r *comm.Request
			if r, err = w.Imrecv(m, buf, comm.Byte); err == nil {
				rst, err = r.Wait()
			}
		}
		if err != nil {
			return err
		}
		if rst != st {
			return fmt.Errorf("message %d: probed %+v, received %+v", i, st, rst)
		}
		if err := check(buf, size, uint64(prev*100+i)); err != nil {
			return err
		}
	}
	return comm.WaitAll(sends...)
}

// Window: the osu_bw pattern, 64 Isends against 64 pre-posted Irecvs,
// then an acknowledgement, between ranks 0 and 1.
func Window(w *comm.Comm) error {
	const window, size = 64, 4 << 10
	switch w.Rank() {
	case 0:
		var reqs []*comm.Request
		for i := range window {
			r, err := w.Isend(payload(size, uint64(i)), comm.Byte, 1, 20)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		_, err := w.Recv(make([]byte, 4), comm.Byte, 1, 21)
		return err
	case 1:
		bufs := make([][]byte, window)
		var reqs []*comm.Request
		for i := range bufs {
			bufs[i] = make([]byte, size)
			r, err := w.Irecv(bufs[i], comm.Byte, 0, 20)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		for i, b := range bufs {
			if err := check(b, size, uint64(i)); err != nil {
				return err
			}
		}
		return w.Send(make([]byte, 4), comm.Byte, 0, 21)
	}
	return nil
}

// BarrierSplit: barriers, then a split by parity with a ring inside each
// half (their ranks differ from the world's), then a Dup.
func BarrierSplit(w *comm.Comm) error {
	for range 3 {
		if err := w.Barrier(); err != nil {
			return err
		}
	}
	s, err := w.Split(w.Rank()%2, -w.Rank())
	if err != nil {
		return err
	}
	wantSize := (w.Size() + 1 - w.Rank()%2) / 2
	if s.Size() != wantSize {
		return fmt.Errorf("split of size %d, want %d", s.Size(), wantSize)
	}
	if s.Size() > 1 {
		n := s.Size()
		next, prev := (s.Rank()+1)%n, (s.Rank()+n-1)%n
		in := make([]byte, 8)
		st, err := s.Sendrecv(payload(8, uint64(s.Rank())), comm.Byte, next, 3, in, comm.Byte, prev, 3)
		if err != nil {
			return err
		}
		if st.Source != prev {
			return fmt.Errorf("split ring: source %d, want %d", st.Source, prev)
		}
		if err := check(in, 8, uint64(prev)); err != nil {
			return err
		}
	}
	d, err := w.Dup()
	if err != nil {
		return err
	}
	return d.Barrier()
}

// Collectives: Allreduce and Bcast across the processes.
func Collectives(w *comm.Comm) error {
	x := make([]byte, 16)
	binary.LittleEndian.PutUint64(x, uint64(w.Rank()))
	binary.LittleEndian.PutUint64(x[8:], 1)
	sum := make([]byte, 16)
	if err := w.Allreduce(x, sum, comm.Int64, sumInt64); err != nil {
		return err
	}
	n := uint64(w.Size())
	if a, b := binary.LittleEndian.Uint64(sum), binary.LittleEndian.Uint64(sum[8:]); a != n*(n-1)/2 || b != n {
		return fmt.Errorf("allreduce: %d %d", a, b)
	}
	big := make([]byte, 300<<10)
	if w.Rank() == w.Size()-1 {
		copy(big, payload(len(big), 77))
	}
	if err := w.Bcast(big, comm.Byte, w.Size()-1); err != nil {
		return err
	}
	return check(big, len(big), 77)
}

// PersistentCollectives: persistent Allreduces of an op that does not
// commute (2x2 matrix products, in rank order), each started 6 times with
// new inputs and compared with the product: on the world (on a power of
// two of members, the starts after the first replay recursive doubling's
// exchanges), in place, and on a communicator of 3 members (the
// algorithm at every start). One start of each is left to progress while
// the rank blocks in a Barrier (the plan's worker runs it), the others
// are waited for at once. Then a persistent Reduce, Bcast and Barrier on
// each (replayed from the second start between processes). It compares
// wall-clock times across its ranks: run it on one host.
func PersistentCollectives(w *comm.Comm) error {
	c3, err := w.Split(min(w.Rank()/3, 1), w.Rank())
	if err != nil {
		return err
	}
	for _, c := range []*comm.Comm{w, c3} {
		if c.Size() < 2 {
			continue
		}
		for _, inPlace := range []bool{false, true} {
			in, out := make([]byte, 16), make([]byte, 16)
			if inPlace {
				in = out
			}
			r, err := c.AllreduceInit(in, out, comm.Uint32, matMul)
			err = starts(r, err, fmt.Sprintf("allreduce of %d ranks (in place %v)", c.Size(), inPlace),
				func(s int) { copy(in, matrix(c.Rank(), s)) },
				func(s int) error {
					if s == 3 {
						return c.Barrier()
					}
					return nil
				},
				func(s int) error {
					if want := product(c.Size(), s); !bytes.Equal(out, want) {
						return fmt.Errorf("%v, want %v", out, want)
					}
					return nil
				})
			if err != nil {
				return err
			}
		}
		// Persistent Reduces of matrix products to rank 0 and to the last
		// member (whose result comes from rank 0 at the end).
		for _, root := range []int{0, c.Size() - 1} {
			in, out := make([]byte, 16), make([]byte, 16)
			r, err := c.ReduceInit(in, out, comm.Uint32, matMul, root)
			err = starts(r, err, fmt.Sprintf("reduce to %d of %d ranks", root, c.Size()),
				func(s int) { copy(in, matrix(c.Rank(), s)) }, nil,
				func(s int) error {
					if want := product(c.Size(), s); c.Rank() == root && !bytes.Equal(out, want) {
						return fmt.Errorf("%v, want %v", out, want)
					}
					return nil
				})
			if err != nil {
				return err
			}
		}
		// A persistent Bcast from the last member, 6 starts of new data,
		// in place of the previous.
		bbuf := make([]byte, 40)
		bc, err := c.BcastInit(bbuf, comm.Byte, c.Size()-1)
		err = starts(bc, err, fmt.Sprintf("bcast of %d ranks", c.Size()),
			func(s int) {
				if c.Rank() == c.Size()-1 {
					copy(bbuf, payload(len(bbuf), uint64(100+s)))
				}
			}, nil,
			func(s int) error { return check(bbuf, len(bbuf), uint64(100+s)) })
		if err != nil {
			return err
		}
		if err := persistentGathers(c); err != nil {
			return err
		}
		// A persistent Barrier: no member's start completes before the
		// last member started (rank 0, late at every start). The times
		// are the host's wall clock, one for all its processes, so that
		// a rank descheduled for a while cannot pass for an early one.
		b, err := c.BarrierInit()
		if err != nil {
			return err
		}
		entered := make([]byte, 8)
		for s := range 4 {
			if c.Rank() == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			t0 := time.Now().UnixNano()
			if err := b.Start(); err != nil {
				return fmt.Errorf("barrier start %d: %w", s, err)
			}
			if _, err := b.Wait(); err != nil {
				return fmt.Errorf("barrier start %d of %d ranks: %w", s, c.Size(), err)
			}
			passed := time.Now().UnixNano()
			binary.LittleEndian.PutUint64(entered, uint64(t0))
			if err := c.Bcast(entered, comm.Byte, 0); err != nil {
				return err
			}
			if e := int64(binary.LittleEndian.Uint64(entered)); passed < e {
				return fmt.Errorf("barrier start %d of %d ranks: passed %v before rank 0 came", s, c.Size(), time.Duration(e-passed))
			}
		}
		if err := b.Free(); err != nil {
			return err
		}
	}
	return nil
}

// persistentGathers runs persistent Allgathers (blocks of 8 bytes and of
// 24 KiB: Bruck's and the ring, between processes) and Alltoalls (16
// bytes and 4 KiB a block: Bruck's from 8 members, and pairwise), in
// place and not, 6 starts each with new blocks, and checks every block.
func persistentGathers(c *comm.Comm) error {
	n, me := c.Size(), c.Rank()
	for _, k := range []int{8, 24 << 10} {
		for _, inPlace := range []bool{false, true} {
			send, recv := make([]byte, k), make([]byte, n*k)
			if inPlace {
				send = recv
			}
			r, err := c.AllgatherInit(send, recv, comm.Byte)
			err = starts(r, err, fmt.Sprintf("allgather of %d ranks, %d bytes (in place %v)", n, k, inPlace),
				func(s int) {
					copy(recv[me*k:], payload(k, uint64(me*100+s)))
					if !inPlace {
						copy(send, payload(k, uint64(me*100+s)))
					}
				}, nil,
				func(s int) error {
					for i := range n {
						if err := check(recv[i*k:], k, uint64(i*100+s)); err != nil {
							return fmt.Errorf("block %d: %w", i, err)
						}
					}
					return nil
				})
			if err != nil {
				return err
			}
		}
	}
	// Block j of rank i at start s carries i*10000+j*100+s.
	for _, k := range []int{16, 4 << 10} {
		for _, inPlace := range []bool{false, true} {
			send, recv := make([]byte, n*k), make([]byte, n*k)
			if inPlace {
				send = recv
			}
			r, err := c.AlltoallInit(send, recv, comm.Byte)
			err = starts(r, err, fmt.Sprintf("alltoall of %d ranks, %d bytes (in place %v)", n, k, inPlace),
				func(s int) {
					for j := range n {
						copy(send[j*k:], payload(k, uint64(me*10000+j*100+s)))
					}
				}, nil,
				func(s int) error {
					for i := range n {
						if err := check(recv[i*k:], k, uint64(i*10000+me*100+s)); err != nil {
							return fmt.Errorf("block from %d: %w", i, err)
						}
					}
					return nil
				})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// starts starts persistent collective r (planned with error err) 6
// times, each with fill(s) before the start, mid(s) (nil: nothing)
// between the start and its Wait, and check(s) after, and frees it; what
// names the collective in its errors.
func starts(r *comm.Request, err error, what string, fill func(s int), mid, check func(s int) error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for s := range 6 {
		fill(s)
		if err := r.Start(); err != nil {
			return fmt.Errorf("%s: start %d: %w", what, s, err)
		}
		if mid != nil {
			if err := mid(s); err != nil {
				return err
			}
		}
		if _, err := r.Wait(); err != nil {
			return fmt.Errorf("%s: start %d: %w", what, s, err)
		}
		if err := check(s); err != nil {
			return fmt.Errorf("%s: start %d: %w", what, s, err)
		}
	}
	return r.Free()
}

// matrix is rank r's 2x2 matrix of uint32s at start s; no two commute.
func matrix(r, s int) []byte {
	b := make([]byte, 16)
	for i, v := range []uint32{1, uint32(r + s + 1), uint32(r%3 + 2), uint32(s + 1)} {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// product is the product of the matrices of ranks 0..n-1 at start s, in
// rank order.
func product(n, s int) []byte {
	p := matrix(0, s)
	for i := 1; i < n; i++ {
		matMul(p, matrix(i, s))
	}
	return p
}

// matMul sets inout = inout × in, 2x2 matrices of uint32s.
func matMul(inout, in []byte) {
	a := func(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
	m := [4]uint32{
		a(inout, 0)*a(in, 0) + a(inout, 1)*a(in, 2), a(inout, 0)*a(in, 1) + a(inout, 1)*a(in, 3),
		a(inout, 2)*a(in, 0) + a(inout, 3)*a(in, 2), a(inout, 2)*a(in, 1) + a(inout, 3)*a(in, 3),
	}
	for i, v := range m {
		binary.LittleEndian.PutUint32(inout[4*i:], v)
	}
}

func sumInt64(inout, in []byte) {
	for i := 0; i+8 <= len(inout); i += 8 {
		binary.LittleEndian.PutUint64(inout[i:], binary.LittleEndian.Uint64(inout[i:])+binary.LittleEndian.Uint64(in[i:]))
	}
}

// Values: gob-encoded values between processes.
func Values(w *comm.Comm) error {
	type point struct {
		X, Y int
		Name string
	}
	if w.Rank() == 1 {
		return w.SendValue(point{1, 2, "p"}, 0, 30)
	}
	if w.Rank() == 0 {
		var p point
		if _, err := w.RecvValue(&p, 1, 30); err != nil {
			return err
		}
		if p != (point{1, 2, "p"}) {
			return fmt.Errorf("value %+v", p)
		}
	}
	return nil
}
