package engine

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Parked goroutines: what each goroutine of a rank that sleeps in mpgo
// waits for, for the deadlock detector and the reports of pending
// operations (Endpoint.Pending).
//
// A rank may have several goroutines in mpgo at once (its own, the
// helpers of Comm.Go and of non-blocking collectives, a dispatcher of
// package am). Each registers a parkRec while it sleeps, so the detector
// sees all of them and none's wake-up hides another's park.
//
// Where the user called mpgo (the call's name and file:line) is not taken
// when a goroutine parks: runtime.Callers costs 0.6–3 µs here, more than a
// whole park and wake-up. A report asks for it instead (Pending hands out
// a siteSlot), and the goroutine fills it in as it wakes, still inside
// the call it was parked in: a deadlock report wakes every goroutine it
// names (their operations fail), and so does a report before the process
// exits on a signal (the world aborts). ResolveSites waits for them.

// parkRec is one parked goroutine: what it waits for, and where a report
// wants its site (nil: nobody asked). Guarded by its endpoint's pmu while
// registered.
type parkRec struct {
	wr   waitRec
	slot *siteSlot
}

// siteSlot is a report's place for a parked goroutine's site, filled in
// by the goroutine when it wakes (done closed after site is written).
type siteSlot struct {
	site Site
	done chan struct{}
}

var parkRecPool = sync.Pool{New: func() any { return new(parkRec) }}

// enter registers the calling goroutine as parked on wr and counts the
// park for the detector.
func (ep *Endpoint) enter(wr waitRec) *parkRec {
	p := parkRecPool.Get().(*parkRec)
	p.wr = wr
	ep.pmu.Lock()
	ep.parked = append(ep.parked, p)
	ep.pmu.Unlock()
	ep.parks.Add(1)
	return p
}

// leave unregisters p, registered by enter; if a report asked where the
// goroutine is, it says (the caller is still inside the call it parked
// in).
func (ep *Endpoint) leave(p *parkRec) {
	ep.pmu.Lock()
	for i, q := range ep.parked {
		if q == p {
			last := len(ep.parked) - 1
			ep.parked[i] = ep.parked[last]
			ep.parked[last] = nil
			ep.parked = ep.parked[:last]
			break
		}
	}
	slot := p.slot
	p.slot = nil
	ep.pmu.Unlock()
	if slot != nil {
		slot.site = callerSite()
		close(slot.done)
	}
	p.wr = waitRec{}
	parkRecPool.Put(p)
}

// slotOf returns p's site slot, making one. ep.pmu must be held.
func (p *parkRec) slotOf() *siteSlot {
	if p.slot == nil {
		p.slot = &siteSlot{done: make(chan struct{})}
	}
	return p.slot
}

// ResolveSites fills in the Site of every wait in ranks whose goroutine
// woke meanwhile, waiting up to d in all for those that did not yet.
func ResolveSites(ranks []PendingRank, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	expired := false
	for i := range ranks {
		for j := range ranks[i].Waits {
			pw := &ranks[i].Waits[j]
			if pw.slot == nil {
				continue
			}
			if !expired {
				select {
				case <-pw.slot.done:
				case <-t.C:
					expired = true
				}
			}
			select {
			case <-pw.slot.done:
				pw.Site = pw.slot.site
				pw.slot = nil
			default:
			}
		}
	}
}

// modulePrefix is mpgo's module path, as function names begin with it.
var modulePrefix = func() string {
	const self = "/comm/internal/engine.init"
	pc, _, _, _ := runtime.Caller(0)
	name := runtime.FuncForPC(pc).Name()
	if i := strings.Index(name, self); i >= 0 {
		return name[:i]
	}
	return "github.com/mpgo/mpgo"
}()

// inLibrary reports whether frame f is mpgo's own code: a function of
// one of its library packages (not its examples or commands) in a file
// that is not a test.
func inLibrary(f *runtime.Frame) bool {
	fn := f.Function
	if !strings.HasPrefix(fn, modulePrefix) || strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	rest := fn[len(modulePrefix):]
	if strings.HasPrefix(rest, ".") {
		return true // the root package
	}
	return strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, "/examples/") && !strings.HasPrefix(rest, "/cmd/")
}

// Site is where a parked goroutine entered mpgo: the user-level call
// (the outermost of mpgo's functions on its stack, e.g. "Allreduce") and
// the caller's file:line (the innermost frame outside mpgo), either empty
// when unknown.
type Site struct {
	Call string
	At   string
}

// siteDepth is how many frames callerSite looks at: mpgo's own frames
// between a park and the user's call are fewer than 20 (a collective's
// algorithm, its call, the typed wrapper).
const siteDepth = 32

// callerSite returns where the calling goroutine entered mpgo.
func callerSite() Site {
	var pcs [siteDepth]uintptr
	n := runtime.Callers(2, pcs[:])
	var s Site
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if f.Function == "" {
			break
		}
		if !inLibrary(&f) {
			s.At = shortFile(f.File) + ":" + strconv.Itoa(f.Line)
			break
		}
		s.Call = methodName(f.Function)
		if !more {
			break
		}
	}
	return s
}

// methodName returns the last element of a function's name:
// "Allreduce" for "github.com/mpgo/mpgo/typed.(*Comm[...]).Allreduce".
func methodName(fn string) string {
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		return fn[i+1:]
	}
	return fn
}

// shortFile keeps a path's file name, as Go's test failures do: the
// directory depends on where the module was checked out.
func shortFile(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}
