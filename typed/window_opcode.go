package typed

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/exp/constraints"
)

// Accumulates between processes: a func cannot travel, so an accumulate
// to a rank of another process names its op, and the target applies its
// own instance of it. Only typed's operators have names (MPI likewise
// allows only predefined operations in accumulates): Sum, Prod, Max, Min,
// the bitwise and logical ones, Replace and NoOp; the target builds them
// for T from T's kind (a named type is handled as its underlying number
// type). A user's Op works on ranks of one process only.

// opCode names one of typed's operators.
type opCode uint8

const (
	opUser opCode = iota // not one of typed's: cannot travel
	opSum
	opProd
	opMax
	opMin
	opBAnd
	opBOr
	opBXor
	opLAnd
	opLOr
	opLXor
	opReplace
	opNoOp
)

// opCodes maps the operators' function names to their codes.
var opCodes = map[string]opCode{
	"Sum": opSum, "Prod": opProd, "Max": opMax, "Min": opMin,
	"BAnd": opBAnd, "BOr": opBOr, "BXor": opBXor, "LAnd": opLAnd, "LOr": opLOr, "LXor": opLXor,
	"Replace": opReplace, "NoOp": opNoOp,
}

// codeOf names op: one of typed's generic operators, instantiated for any
// T, or opUser.
func codeOf[T any](op Op[T]) opCode {
	f := runtime.FuncForPC(reflect.ValueOf(op).Pointer())
	if f == nil {
		return opUser
	}
	name, ok := strings.CutPrefix(f.Name(), "github.com/mpgo/mpgo/typed.")
	if !ok {
		return opUser
	}
	if name, ok = strings.CutSuffix(name, "[...]"); !ok {
		return opUser
	}
	return opCodes[name]
}

// opFor returns typed's operator code for T, or nil when it is not
// defined on T (Sum of a struct, Max of a complex).
func opFor[T any](code opCode) Op[T] {
	switch code {
	case opUser:
		return nil
	case opReplace:
		return Replace[T]
	case opNoOp:
		return NoOp[T]
	}
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int:
		return via[T](intOp[int](code))
	case reflect.Int8:
		if code == opSum {
			return via[T](sumBytes[int8])
		}
		return via[T](intOp[int8](code))
	case reflect.Int16:
		return via[T](intOp[int16](code))
	case reflect.Int32:
		return via[T](intOp[int32](code))
	case reflect.Int64:
		return via[T](intOp[int64](code))
	case reflect.Uint:
		return via[T](intOp[uint](code))
	case reflect.Uint8:
		if code == opSum {
			return via[T](sumBytes[uint8])
		}
		return via[T](intOp[uint8](code))
	case reflect.Uint16:
		return via[T](intOp[uint16](code))
	case reflect.Uint32:
		return via[T](intOp[uint32](code))
	case reflect.Uint64:
		return via[T](intOp[uint64](code))
	case reflect.Uintptr:
		return via[T](intOp[uintptr](code))
	case reflect.Float32:
		return via[T](floatOp[float32](code))
	case reflect.Float64:
		return via[T](floatOp[float64](code))
	case reflect.Complex64:
		return via[T](complexOp[complex64](code))
	case reflect.Complex128:
		return via[T](complexOp[complex128](code))
	}
	return nil
}

// via makes an Op of T from an operator on B, T's underlying type.
func via[T, B any](f func(inout, in []B)) Op[T] {
	if f == nil {
		return nil
	}
	return func(inout, in []T) { f(recast[B](inout), recast[B](in)) }
}

// recast views s as elements of B, a type of the same size and layout.
func recast[B, T any](s []T) []B {
	return unsafe.Slice((*B)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

func intOp[B constraints.Integer](code opCode) func(inout, in []B) {
	switch code {
	case opBAnd:
		return BAnd[B]
	case opBOr:
		return BOr[B]
	case opBXor:
		return BXor[B]
	case opLAnd:
		return LAnd[B]
	case opLOr:
		return LOr[B]
	case opLXor:
		return LXor[B]
	}
	return floatOp[B](code)
}

func floatOp[B constraints.Integer | constraints.Float](code opCode) func(inout, in []B) {
	switch code {
	case opMax:
		return Max[B]
	case opMin:
		return Min[B]
	}
	return complexOp[B](code)
}

func complexOp[B Number](code opCode) func(inout, in []B) {
	switch code {
	case opSum:
		return Sum[B]
	case opProd:
		return Prod[B]
	}
	return nil
}

// sumBytes is [Sum] on bytes (wrapping, signed or not: the same bits),
// eight at a time in the lanes of a uint64: the low seven bits of each
// byte added without carries out of the lane, the top bit by exclusive
// or. It is what an accumulate of bytes with Sum runs (see
// Window.fastOp): the element-wise loop takes a cycle a byte.
func sumBytes[B int8 | uint8](inout, in []B) {
	a, b := recast[byte](inout), recast[byte](in)
	const high = 0x8080808080808080
	n := len(a) &^ 7
	for i := 0; i < n; i += 8 {
		x, y := binary.LittleEndian.Uint64(a[i:]), binary.LittleEndian.Uint64(b[i:])
		binary.LittleEndian.PutUint64(a[i:], ((x&^high)+(y&^high))^((x^y)&high))
	}
	for i := n; i < len(a); i++ {
		a[i] += b[i]
	}
}

// opMemo is the op a window last looked up in fastOp, and what it runs
// instead (nil: the op itself).
type opMemo[T any] struct {
	pc   uintptr
	fast Op[T]
}

// fastOp returns what an accumulate with op runs: op itself, or, for
// typed's Sum on bytes, sumBytes. The answer for the last op seen is kept:
// looking an op up by name costs more than a small accumulate.
func (w *Window[T]) fastOp(op Op[T]) Op[T] {
	if elemSize[T]() != 1 {
		return op
	}
	pc := reflect.ValueOf(op).Pointer()
	m := w.memo.Load()
	if m == nil || m.pc != pc {
		m = &opMemo[T]{pc: pc}
		if code := codeOf(op); code == opSum {
			m.fast = opFor[T](code)
		}
		w.memo.Store(m)
	}
	if m.fast != nil {
		return m.fast
	}
	return op
}
