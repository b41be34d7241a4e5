package am

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
)

// Which endpoint's dispatcher runs the calling goroutine?
//
// A handler that blocks in [Future.Wait] hands its endpoint's dispatch on
// to another goroutine (dispatch.go), but only a wait made by the handler
// itself may do so: the rank's own goroutine, or any other, waiting on a
// Future of the same endpoint must not, or two handlers would run at once.
// Go gives a goroutine no identity it could ask for, so a dispatcher
// goroutine writes its endpoint's id into its own call stack: it runs its
// loop beneath a chain of nested calls, one frame per hex digit of the id,
// each digit's frame a function of its own (digit0 … digitF), on top of a
// frame of markBase; [stackMark] reads the chain back with
// runtime.Callers. Ids are small (one per endpoint created in the
// process), so a chain is a few frames; reading it back walks the stack
// (1–3 µs). So that only a dispatcher goroutine pays for the walk, each
// also sets its own debug.SetPanicOnFault flag, the one setting Go keeps
// per goroutine, which [onDispatcherGoroutine] reads in nanoseconds (a
// handler that faults at an unexpected address then panics instead of
// crashing the program, and the panic is reported as any other). Goroutines
// a handler starts have stacks and flags of their own, without the mark,
// as they should.

// lastID numbers the endpoints of the process, from 1: an id names an
// endpoint for [stackMark] and nothing else.
var lastID atomic.Uint64

// digitFuncs are the digits' functions, set by init (a variable
// initialised with them would refer to itself through nest).
var digitFuncs [16]func(v uint64, f func())

// digitPC holds, for each digit, the return address in its function (where
// it calls nest), which runtime.Callers reports for its frame; basePC is
// markBase's. markable is false when they could not be found: then no
// goroutine is ever taken for a dispatcher.
var (
	digitPC  [16]uintptr
	basePC   uintptr
	markable bool
)

func init() {
	digitFuncs = [16]func(v uint64, f func()){
		digit0, digit1, digit2, digit3, digit4, digit5, digit6, digit7,
		digit8, digit9, digitA, digitB, digitC, digitD, digitE, digitF,
	}
	// returnPC returns the return address in the frame n below its
	// caller's caller, and checks that it lies in the function named.
	returnPC := func(call func(f func()), name string) uintptr {
		var pc uintptr
		call(func() {
			// The stack: runtime.Callers, this func, nest, then the frame.
			var pcs [2]uintptr
			if runtime.Callers(2, pcs[:]) == 2 {
				pc = pcs[1]
			}
		})
		if fn := runtime.FuncForPC(pc - 1); fn == nil || !strings.HasSuffix(fn.Name(), "."+name) {
			return 0
		}
		return pc
	}
	basePC = returnPC(func(f func()) { markBase(0, f) }, "markBase")
	markable = basePC != 0
	for d, fn := range digitFuncs {
		digitPC[d] = returnPC(func(f func()) { fn(0, f) }, fmt.Sprintf("digit%X", d))
		markable = markable && digitPC[d] != 0
	}
}

// runMarked calls f beneath a chain of frames that spells id.
func runMarked(id uint64, f func()) { markBase(id, f) }

// runDispatcher runs f as a dispatcher goroutine of the endpoint numbered
// id: beneath its mark, with its flag set.
func runDispatcher(id uint64, f func()) {
	debug.SetPanicOnFault(true)
	runMarked(id, f)
}

// onDispatcherGoroutine reports whether the calling goroutine may be a
// dispatcher's: whether its flag is set (see runDispatcher).
func onDispatcherGoroutine() bool {
	old := debug.SetPanicOnFault(true)
	if !old {
		debug.SetPanicOnFault(false)
	}
	return old
}

// markBase is the outermost frame of a mark.
//
//go:noinline
func markBase(id uint64, f func()) { nest(id, f) }

// nest calls the frame of v's lowest digit, which calls nest for the rest,
// and then f: the outermost digit frame holds the lowest digit, the
// innermost the highest.
//
//go:noinline
func nest(v uint64, f func()) {
	if v == 0 {
		f()
		return
	}
	digitFuncs[v&15](v>>4, f)
}

//go:noinline
func digit0(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit1(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit2(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit3(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit4(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit5(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit6(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit7(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit8(v uint64, f func()) { nest(v, f) }

//go:noinline
func digit9(v uint64, f func()) { nest(v, f) }

//go:noinline
func digitA(v uint64, f func()) { nest(v, f) }

//go:noinline
func digitB(v uint64, f func()) { nest(v, f) }

//go:noinline
func digitC(v uint64, f func()) { nest(v, f) }

//go:noinline
func digitD(v uint64, f func()) { nest(v, f) }

//go:noinline
func digitE(v uint64, f func()) { nest(v, f) }

//go:noinline
func digitF(v uint64, f func()) { nest(v, f) }

// stackMark returns the id the calling goroutine runs beneath (see
// runMarked), and whether it runs beneath one.
func stackMark() (uint64, bool) {
	if !markable {
		return 0, false
	}
	var pcs [32]uintptr
	var v uint64
	for skip := 2; ; {
		n := runtime.Callers(skip, pcs[:])
		for _, pc := range pcs[:n] {
			if pc == basePC {
				return v, true
			}
			if d := digitOf(pc); d >= 0 {
				v = v<<4 | uint64(d)
			}
			// Other frames: nest's between the digits, or those above.
		}
		if n < len(pcs) {
			return 0, false
		}
		skip += n
	}
}

// digitOf returns the digit whose frame returns to pc, or -1.
func digitOf(pc uintptr) int {
	for d, p := range digitPC {
		if p == pc {
			return d
		}
	}
	return -1
}
