package typed

import (
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sync"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
)

// Windows across processes over a device with one-sided operations
// (comm.OneSided: the RDMA backend): every rank exposes its part to the
// device when the window is made, and the origin reads and writes the
// target's memory through the device itself, so the target's ranks and
// its window handlers take no part: Put is a write (fi_write), Get a read
// (fi_read), and the accumulates are the device's atomics (fi_atomic,
// fi_fetch_atomic, fi_compare_atomic) when the device does every
// accumulate typed defines on T atomically; otherwise, and for element
// types the device has no atomics of (structs, arrays), a window's
// accumulates all stay on the handlers: MPI requires accumulates to one
// element to be atomic with respect to each other, and a handler's
// compare-and-swap loop is not atomic with the device's own updates, so
// the choice is made once per window, never per call. Lock, Unlock,
// Fence and PSCW stay messages to the handlers; Flush, Unlock, Complete
// and Fence wait for the device's completions of Puts, which are remote
// completions (the data is in the target's memory).
//
// A window of Go memory (NewWindow) is pinned (runtime.Pinner) for its
// life, so that the device may reach it while the garbage collector runs
// (Go's collector does not move heap objects, but cgo's rules say memory
// the provider holds must be pinned); memory of AllocWindow is off the Go
// heap already. MPGO_WINDOW_PATH=am in the environment of every process
// keeps windows on the handlers (to compare the two paths).

// windowPathEnv names the environment variable that forces the handlers'
// path (value "am").
const windowPathEnv = "MPGO_WINDOW_PATH"

// fabricPath is a window's state on the one-sided path.
type fabricPath struct {
	os      *comm.OneSided
	x       device.Exposure
	pin     runtime.Pinner
	remotes []device.Remote   // every rank's part
	elem    int               // bytes per element
	atomics bool              // accumulates go as the device's atomics
	atype   device.AtomicType // the element type, when atomics

	mu      sync.Mutex          // guards pending
	pending map[int][]*comm.RMA // Puts not yet waited for, by target
}

// setupFabric puts the window on the one-sided path when the device
// offers it on every rank: collective. Any rank's failure to expose its
// part, or a rank whose environment forces the handlers, keeps the
// window on the handlers on every rank.
func (w *Window[T]) setupFabric(base []T, op string) error {
	osd := w.wc.OneSided()
	fp := &fabricPath{os: osd, elem: elemSize[T](), pending: map[int][]*comm.RMA{}}
	var mine [24]byte // flags (1: exposed, 2: atomics), address, key
	if osd != nil && os.Getenv(windowPathEnv) != "am" {
		mem := bytesOf(base)
		if len(mem) > 0 && w.mem == nil {
			fp.pin.Pin(&base[0])
		}
		x, err := osd.Expose(mem)
		if err == nil {
			fp.x = x
			mine[0] = 1
			if t, ok := atomicsOf[T](osd); ok {
				fp.atype = t
				mine[0] |= 2
			}
			binary.NativeEndian.PutUint64(mine[8:], x.Remote().Addr)
			binary.NativeEndian.PutUint64(mine[16:], x.Remote().Key)
		} else {
			fp.pin.Unpin()
		}
	}
	all := make([]byte, len(mine)*w.n)
	if err := w.wc.Allgather(mine[:], all, comm.Byte); err != nil {
		fp.close()
		return fmt.Errorf("typed: %s: %w", op, err)
	}
	flags := byte(3)
	fp.remotes = make([]device.Remote, w.n)
	for r := range w.n {
		e := all[len(mine)*r:]
		flags &= e[0]
		fp.remotes[r] = device.Remote{Addr: binary.NativeEndian.Uint64(e[8:]), Key: binary.NativeEndian.Uint64(e[16:])}
	}
	if flags&1 == 0 {
		fp.close()
		return nil
	}
	fp.atomics = flags&2 != 0
	w.rm.fab = fp
	return nil
}

// close ends the exposure and unpins the part.
func (fp *fabricPath) close() error {
	var err error
	if fp.x != nil {
		err = fp.x.Close()
		fp.x = nil
	}
	fp.pin.Unpin()
	return err
}

// atomicOps maps typed's operator codes onto the device's.
var atomicOps = [...]device.AtomicOp{opSum: device.AtomicSum, opProd: device.AtomicProd, opMax: device.AtomicMax,
	opMin: device.AtomicMin, opBAnd: device.AtomicBAnd, opBOr: device.AtomicBOr, opBXor: device.AtomicBXor,
	opLAnd: device.AtomicLAnd, opLOr: device.AtomicLOr, opLXor: device.AtomicLXor, opReplace: device.AtomicReplace,
	opNoOp: device.AtomicRead}

// atomicsOf reports whether os does every accumulate typed defines on T
// atomically (each op plain and fetching, and compare-and-swap), and
// T's atomic type.
func atomicsOf[T any](os *comm.OneSided) (device.AtomicType, bool) {
	t, ok := atomicType[T]()
	if !ok || !os.Atomics(device.AtomicCompare, bitsOf(t), device.AtomicCSwap) {
		return 0, false
	}
	for code := opSum; code <= opNoOp; code++ {
		if opFor[T](code) == nil {
			continue
		}
		if code != opNoOp && !os.Atomics(device.AtomicPlain, t, atomicOps[code]) {
			return 0, false
		}
		if !os.Atomics(device.AtomicFetch, t, atomicOps[code]) {
			return 0, false
		}
	}
	return t, true
}

// atomicType is the device's name of T, a number type; false for others.
func atomicType[T any]() (device.AtomicType, bool) {
	rt := reflect.TypeFor[T]()
	switch rt.Kind() {
	case reflect.Int8:
		return device.AtomicInt8, true
	case reflect.Uint8:
		return device.AtomicUint8, true
	case reflect.Int16:
		return device.AtomicInt16, true
	case reflect.Uint16:
		return device.AtomicUint16, true
	case reflect.Int32:
		return device.AtomicInt32, true
	case reflect.Uint32:
		return device.AtomicUint32, true
	case reflect.Int, reflect.Int64:
		if rt.Size() == 8 {
			return device.AtomicInt64, true
		}
		return device.AtomicInt32, true
	case reflect.Uint, reflect.Uintptr, reflect.Uint64:
		if rt.Size() == 8 {
			return device.AtomicUint64, true
		}
		return device.AtomicUint32, true
	case reflect.Float32:
		return device.AtomicFloat32, true
	case reflect.Float64:
		return device.AtomicFloat64, true
	case reflect.Complex64:
		return device.AtomicComplex64, true
	case reflect.Complex128:
		return device.AtomicComplex128, true
	}
	return 0, false
}

// bitsOf is the unsigned integer type of t's size: CompareAndSwap
// compares bit for bit, where a device's compare of floats may compare
// values (-0 equal to +0, NaN to nothing: libfabric leaves it to the
// provider; tcp;ofi_rxm happens to compare bits). This takes for
// granted that a provider serialises the atomics on one address whatever
// their datatype (rxm applies them one at a time at the target; a NIC
// per address).
func bitsOf(t device.AtomicType) device.AtomicType {
	switch t {
	case device.AtomicFloat32:
		return device.AtomicUint32
	case device.AtomicFloat64, device.AtomicComplex64:
		return device.AtomicUint64
	}
	return t
}

// at is where element disp of target's part is.
func (fp *fabricPath) at(target, disp int) device.Remote {
	return fp.remotes[target].Offset(disp * fp.elem)
}

// flush waits for the Puts issued to target (< 0: to every rank) and
// returns the first error among them.
func (fp *fabricPath) flush(target int) error {
	var first error
	for _, r := range takePending(&fp.mu, fp.pending, target) {
		if err := r.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// put writes src at target's element disp; a flush waits for it.
func (fp *fabricPath) put(src []byte, target, disp int) error {
	r, err := fp.os.Write(target, src, fp.at(target, disp))
	if err != nil {
		return err
	}
	fp.mu.Lock()
	fp.pending[target] = append(fp.pending[target], r)
	fp.mu.Unlock()
	return nil
}

// get reads into dst from target's element disp.
func (fp *fabricPath) get(dst []byte, target, disp int) error {
	r, err := fp.os.Read(target, dst, fp.at(target, disp))
	if err != nil {
		return err
	}
	return r.Wait()
}

// accumulate applies code with src to target's elements from disp,
// fetching the old ones into result when it is not nil, and waits for it:
// an accumulate complete before the next is issued keeps MPI's default
// ordering of accumulates from one origin to one element (the provider
// promises none between atomics).
func (fp *fabricPath) accumulate(src, result []byte, target, disp int, code opCode) error {
	a := device.Atomic{Kind: device.AtomicFetch, Type: fp.atype, Op: atomicOps[code], Operand: src, Result: result}
	if result == nil {
		if code == opNoOp {
			return nil // changes nothing, fetches nothing
		}
		a.Kind = device.AtomicPlain
	}
	r, err := fp.os.Atomic(target, a, fp.at(target, disp))
	if err != nil {
		return err
	}
	return r.Wait()
}

// compareAndSwap swaps target's element disp for value if it equals
// compare and returns the old one, in result.
func (fp *fabricPath) compareAndSwap(compare, value, result []byte, target, disp int) error {
	r, err := fp.os.Atomic(target, device.Atomic{Kind: device.AtomicCompare, Type: bitsOf(fp.atype), Op: device.AtomicCSwap,
		Operand: value, Compare: compare, Result: result}, fp.at(target, disp))
	if err != nil {
		return err
	}
	return r.Wait()
}

// bytesOfOne views one element as bytes.
func bytesOfOne[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}
