package typed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
)

// Windows across processes (TCP, RDMA): the target side of every
// operation is an active-message handler (package am) of the window's own
// endpoint, which runs on the target's dispatcher goroutine, so passive
// target needs no call of the target's. A Put or an Accumulate is a Call
// whose reply says it is done: the origin keeps its Future until a Flush,
// an Unlock, a Complete or a Fence waits for it (the origin's buffer is
// copied into the request at once: FlushLocal has nothing to wait for). A
// Get, a GetAccumulate, a FetchAndOp or a CompareAndSwap waits for its
// reply, which carries the data. The lock manager of each part lives at
// its target: Lock and Unlock are Calls to it, and a Lock that must wait
// receives its grant from the handler of the Unlock that made room, as
// between goroutine ranks. Handlers apply accumulates with the same
// element-wise atomic code as goroutine ranks, so the target's own
// accumulates (which go through its handlers too) are atomic with the
// others'. Over a device with one-sided operations (the RDMA backend),
// the data path leaves the handlers (window_fabric.go): only the
// synchronisation stays here.

// remote is a window's state for ranks in other processes.
type remote[T any] struct {
	ep                               *am.Endpoint
	put, get, acc, cas, lock, unlock *am.Handler[[]byte, []byte]
	sizes                            []int       // every rank's part, in elements
	fab                              *fabricPath // the one-sided path; nil: data through the handlers too

	// served counts the data requests (put, get, acc, cas) this rank's
	// handlers ran: none on the one-sided path.
	served atomic.Int64

	mu      sync.Mutex                   // guards pending
	pending map[int][]*am.Future[[]byte] // Puts and Accumulates not yet known complete, by target

	// mem orders the handlers' accesses to this rank's part with the
	// rank's own, as the epoch calls that separate them say (see edge).
	mem atomic.Uint64
}

// edge is a happens-before edge between this rank's own accesses to its
// part and the handlers' (release and acquire, one atomic read-modify-
// write on one word): the handlers take it before and after they touch the
// part, the rank at the epoch calls that bracket its own accesses (Post,
// Wait, Fence, Lock, Unlock, Flush, Free). The causal chain between them
// runs through another process (an origin that saw the rank's Post sends
// a Put; a Wait returns once the origin saw its Puts done), which the
// memory model orders by the rings' and sockets' synchronisation but the
// race detector, which sees one process, cannot follow; the edge makes it
// visible here. A window within one process needs none.
func (w *Window[T]) edge() {
	if w.rm != nil {
		w.rm.mem.Add(1)
	}
}

// A request is a 16-byte head and the data: the displacement (8 bytes),
// the op code, whether the old values come back, and a count of elements
// (Get), in this machine's byte order (one architecture for the job).
const reqHead = 16

func request(disp int, code opCode, fetch bool, count int, data []byte) []byte {
	b := make([]byte, reqHead+len(data))
	binary.NativeEndian.PutUint64(b, uint64(disp))
	b[8] = byte(code)
	if fetch {
		b[9] = 1
	}
	binary.NativeEndian.PutUint32(b[12:], uint32(count))
	copy(b[reqHead:], data)
	return b
}

// winReq is a request's parts.
type winReq struct {
	disp  int
	code  opCode
	fetch bool
	count int
	data  []byte
}

// parse splits a request into its parts.
func parse(b []byte) (winReq, error) {
	if len(b) < reqHead {
		return winReq{}, fmt.Errorf("typed: window request of %d bytes: %w", len(b), comm.ErrArg)
	}
	return winReq{disp: int(binary.NativeEndian.Uint64(b)), code: opCode(b[8]), fetch: b[9] == 1,
		count: int(binary.NativeEndian.Uint32(b[12:])), data: b[reqHead:]}, nil
}

// shareRemote makes the window over ranks not all in this process: the
// parts' lengths and element types are gathered, and the endpoint and its
// handlers set up.
func (w *Window[T]) shareRemote(base []T, want int, op string, shared bool) error {
	mine := make([]byte, 16)
	binary.NativeEndian.PutUint64(mine, uint64(want))
	binary.NativeEndian.PutUint64(mine[8:], uint64(w.t))
	all := make([]byte, 16*w.n)
	if err := w.wc.Allgather(mine, all, comm.Byte); err != nil {
		return fmt.Errorf("typed: %s: %w", op, err)
	}
	rm := &remote[T]{sizes: make([]int, w.n), pending: make(map[int][]*am.Future[[]byte])}
	for r := range w.n {
		rm.sizes[r] = int(binary.NativeEndian.Uint64(all[16*r:]))
		if comm.Type(binary.NativeEndian.Uint64(all[16*r+8:])) != w.t {
			return fmt.Errorf("typed: %s of %T on rank %d, of another element type on rank %d: %w", op, *new(T), w.rank, r, comm.ErrType)
		}
	}
	w.sh = &winShared[T]{targets: make([]winTarget[T], w.n)}
	if shared {
		if err := w.mapSegment(rm.sizes); err != nil {
			return fmt.Errorf("typed: %s: %w", op, err)
		}
		base = w.sh.targets[w.rank].base
	}
	me := &w.sh.targets[w.rank]
	me.base, me.t, me.atomic = base, w.t, atomicElems(base)
	ep, err := am.New(w.wc)
	if err != nil {
		w.unmapSegment()
		return fmt.Errorf("typed: %s: %w", op, err)
	}
	rm.ep = ep
	w.rm = rm
	if err := w.register(); err != nil {
		_ = ep.Close()
		w.unmapSegment()
		return fmt.Errorf("typed: %s: %w", op, err)
	}
	if shared { // one segment every process maps: no handler, no device
		return nil
	}
	if err := w.setupFabric(base, op); err != nil {
		_ = ep.Close()
		return err
	}
	return nil
}

// register registers the target side's handlers: every rank registers the
// same names, and a request that arrives first waits for its handler.
func (w *Window[T]) register() error {
	rm := w.rm
	var errs [6]error
	rm.put, errs[0] = am.Register(rm.ep, "put", w.serving(w.servePut))
	rm.get, errs[1] = am.Register(rm.ep, "get", w.serving(w.serveGet))
	rm.acc, errs[2] = am.Register(rm.ep, "acc", w.serving(w.serveAcc))
	rm.cas, errs[3] = am.Register(rm.ep, "cas", w.serving(w.serveCAS))
	rm.lock, errs[4] = am.Register(rm.ep, "lock", w.serveLock)
	rm.unlock, errs[5] = am.Register(rm.ep, "unlock", w.serveUnlock)
	return errors.Join(errs[:]...)
}

// mine returns this rank's elements [disp, disp+n) as bytes; the origin
// checked the range.
func (w *Window[T]) mine(disp, n int) ([]byte, error) {
	base := w.sh.targets[w.rank].base
	if disp < 0 || n < 0 || disp > len(base) || n > len(base)-disp {
		return nil, fmt.Errorf("typed: window request for elements [%d, %d) of a part of %d: %w", disp, disp+n, len(base), comm.ErrArg)
	}
	return bytesOf(base[disp : disp+n]), nil
}

// serving makes h a data request's handler: each request is counted
// (served), parsed, and bracketed by the happens-before edge with the
// rank's own accesses (edge).
func (w *Window[T]) serving(h func(r winReq) ([]byte, error)) func(from int, req []byte) ([]byte, error) {
	return func(_ int, req []byte) ([]byte, error) {
		w.rm.served.Add(1)
		w.edge()
		defer w.edge()
		r, err := parse(req)
		if err != nil {
			return nil, err
		}
		return h(r)
	}
}

func (w *Window[T]) servePut(r winReq) ([]byte, error) {
	dst, err := w.mine(r.disp, len(r.data)/elemSize[T]())
	if err != nil {
		return nil, err
	}
	copy(dst, r.data)
	return nil, nil
}

func (w *Window[T]) serveGet(r winReq) ([]byte, error) {
	src, err := w.mine(r.disp, r.count)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), src...), nil
}

func (w *Window[T]) serveAcc(r winReq) ([]byte, error) {
	op := opFor[T](r.code)
	if op == nil {
		return nil, fmt.Errorf("typed: accumulate with op %d, not defined on %T: %w", r.code, *new(T), comm.ErrNotSupported)
	}
	src, err := sliceOf[T](r.data)
	if err != nil {
		return nil, err
	}
	if _, err := w.mine(r.disp, len(src)); err != nil {
		return nil, err
	}
	var old []T
	if r.fetch {
		old = make([]T, len(src))
	}
	s := w.scratch()
	w.sh.accumulate(w.rank, r.disp, src, old, op, s)
	w.unscratch(s)
	return bytesOf(old), nil
}

func (w *Window[T]) serveCAS(r winReq) ([]byte, error) {
	pair, err := sliceOf[T](r.data)
	if err != nil || len(pair) != 2 {
		return nil, fmt.Errorf("typed: compare-and-swap request of %d bytes: %w", len(r.data), comm.ErrArg)
	}
	if _, err := w.mine(r.disp, 1); err != nil {
		return nil, err
	}
	old := w.sh.compareAndSwap(w.rank, r.disp, pair[0], pair[1])
	return bytesOf([]T{old}), nil
}

// serveLock takes this part's lock for from, or queues it: the reply says
// which (1: granted).
func (w *Window[T]) serveLock(from int, req []byte) ([]byte, error) {
	if len(req) != 1 {
		return nil, fmt.Errorf("typed: lock request of %d bytes: %w", len(req), comm.ErrArg)
	}
	if w.sh.targets[w.rank].lock.acquire(from, req[0] == 1) {
		return []byte{1}, nil
	}
	return []byte{0}, nil
}

// serveUnlock releases from's hold and sends the grants it makes.
func (w *Window[T]) serveUnlock(from int, req []byte) ([]byte, error) {
	return nil, w.grant(w.rank)
}

// grant releases a hold on target's lock (a part of this process) and
// sends the grants that makes.
func (w *Window[T]) grant(target int) error {
	var buf [4]int
	for _, r := range w.sh.targets[target].lock.release(buf[:0]) {
		if err := w.wc.Send(nil, comm.Byte, r, tagWinGrant+target); err != nil {
			return err
		}
	}
	return nil
}

// elemSize is the size of T in bytes.
func elemSize[T any]() int { return int(unsafe.Sizeof(*new(T))) }

// call sends req to h at target and keeps the Future until a flush.
func (rm *remote[T]) call(h *am.Handler[[]byte, []byte], target int, req []byte) {
	f := h.Call(target, req)
	rm.mu.Lock()
	rm.pending[target] = append(rm.pending[target], f)
	rm.mu.Unlock()
}

// flush waits for the operations issued to target (< 0: to every rank)
// and returns the first error among them.
func (rm *remote[T]) flush(target int) error {
	var first error
	if rm.fab != nil {
		first = rm.fab.flush(target)
	}
	for _, f := range takePending(&rm.mu, rm.pending, target) {
		if _, err := f.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// takePending removes and returns the operations of pending (guarded by
// mu) issued to target, or to every rank when target < 0.
func takePending[F any](mu *sync.Mutex, pending map[int][]F, target int) []F {
	mu.Lock()
	defer mu.Unlock()
	if target >= 0 {
		fs := pending[target]
		delete(pending, target)
		return fs
	}
	var fs []F
	for t, tf := range pending {
		fs = append(fs, tf...)
		delete(pending, t)
	}
	return fs
}

// wait sends req to h at target and returns the reply.
func (rm *remote[T]) wait(h *am.Handler[[]byte, []byte], target int, req []byte) ([]byte, error) {
	return h.Call(target, req).Wait()
}

// Origin side of each operation; the range and the epoch are checked.

func (w *Window[T]) remotePut(src []T, target, disp int) error {
	if w.rm.fab != nil {
		return w.rm.fab.put(bytesOf(src), target, disp)
	}
	w.rm.call(w.rm.put, target, request(disp, opUser, false, 0, bytesOf(src)))
	return nil
}

func (w *Window[T]) remoteGet(dst []T, target, disp int) error {
	if w.rm.fab != nil {
		return w.rm.fab.get(bytesOf(dst), target, disp)
	}
	b, err := w.rm.wait(w.rm.get, target, request(disp, opUser, false, len(dst), nil))
	if err != nil {
		return err
	}
	if len(b) != len(dst)*elemSize[T]() {
		return fmt.Errorf("typed: Get of %d elements: reply of %d bytes: %w", len(dst), len(b), comm.ErrTruncate)
	}
	copy(bytesOf(dst), b)
	return nil
}

// remoteCode names op for the target, or fails when it cannot travel.
func remoteCode[T any](what string, op Op[T]) (opCode, error) {
	code := codeOf(op)
	if opFor[T](code) == nil {
		return 0, fmt.Errorf("typed: Window.%s to a rank of another process with an op other than typed's predefined ones (Sum, Prod, Max, Min, BAnd, …, Replace, NoOp, on numbers): %w", what, comm.ErrNotSupported)
	}
	return code, nil
}

func (w *Window[T]) remoteAccumulate(src, result []T, target, disp int, op Op[T], what string) error {
	code, err := remoteCode(what, op)
	if err != nil {
		return err
	}
	if fp := w.rm.fab; fp != nil && fp.atomics {
		var res []byte
		if result != nil {
			res = bytesOf(result)
		}
		return fp.accumulate(bytesOf(src), res, target, disp, code)
	}
	req := request(disp, code, result != nil, 0, bytesOf(src))
	if result == nil {
		w.rm.call(w.rm.acc, target, req)
		return nil
	}
	b, err := w.rm.wait(w.rm.acc, target, req)
	if err != nil {
		return err
	}
	if len(b) != len(result)*elemSize[T]() {
		return fmt.Errorf("typed: Window.%s of %d elements: reply of %d bytes: %w", what, len(result), len(b), comm.ErrTruncate)
	}
	copy(bytesOf(result), b)
	return nil
}

func (w *Window[T]) remoteCAS(compare, value T, target, disp int) (T, error) {
	var old T
	if fp := w.rm.fab; fp != nil && fp.atomics {
		err := fp.compareAndSwap(bytesOfOne(&compare), bytesOfOne(&value), bytesOfOne(&old), target, disp)
		return old, err
	}
	b, err := w.rm.wait(w.rm.cas, target, request(disp, opUser, true, 1, bytesOf([]T{compare, value})))
	if err != nil {
		return old, err
	}
	if len(b) != elemSize[T]() {
		return old, fmt.Errorf("typed: Window.CompareAndSwap: reply of %d bytes: %w", len(b), comm.ErrTruncate)
	}
	p := []T{old}
	copy(bytesOf(p), b)
	return p[0], nil
}

// remoteAcquire takes target's lock through its lock manager.
func (w *Window[T]) remoteAcquire(target int, exclusive bool) error {
	req := []byte{0}
	if exclusive {
		req[0] = 1
	}
	b, err := w.rm.wait(w.rm.lock, target, req)
	if err != nil {
		return err
	}
	if len(b) == 1 && b[0] == 1 {
		return nil
	}
	_, err = w.wc.Recv(nil, comm.Byte, target, tagWinGrant+target)
	return err
}

// remoteRelease completes the operations to target and gives its lock
// back.
func (w *Window[T]) remoteRelease(target int) error {
	if err := w.rm.flush(target); err != nil {
		return err
	}
	_, err := w.rm.wait(w.rm.unlock, target, nil)
	return err
}
