package engine

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The deadlock detector across the processes of a job.
//
// A process is passive when every rank of it is blocked as the in-process
// detector sees it (deadlock.go: all of its goroutines in mpgo parked on
// incomplete operations, or returned with nothing running) and no
// rendezvous payload is being pulled for it. Each process counts the
// messages it handed the device (sent) and those that arrived from it
// (arrived); control messages are not counted.
//
// The coordinator (the lowest process not known to have finished) runs
// waves, as Mattern's four-counter method does: while it is passive
// itself, every interval it asks every other process for its state
// (passive, the sum of its ranks' parks counters, sent, arrived) and
// waits for all answers. The job is deadlocked when two consecutive waves
// found every process passive, every process's parks and counters the
// same in both, and the job's sent equal to its arrived. Then each process
// was passive without a wake-up from its first answer to its second; all
// second questions were asked after all first answers came, so at that
// moment every process was passive, none could send, and every message
// ever sent had arrived (a message's arrival that completes a receive
// wakes a goroutine, which shows in the parks or the passive flag): no
// process can ever progress again.
//
// The coordinator then tells every process; each fails the operations
// its ranks are parked on with ErrDeadlock, as the in-process detector
// does, learns where they were called (ResolveSites), and sends its
// ranks' lines of the report to the coordinator, which assembles the
// whole job's (JobDeadlock).
//
// Waves start an interval apart (250 ms by default): what the counters
// do not see — the notice that tells a synchronous or rendezvous sender
// that its receive took the message, which the backend sends on its own —
// is taken to arrive within that time, as it does on any live connection.
//
// Not detected: a rank that spins in its own code, or polls (Test,
// Iprobe) in a loop — it runs; a process that waits outside mpgo; a job
// in which some process has the detector off (it never answers). A
// process that finished (said goodbye) is not asked: receives from its
// ranks fail with ErrPeerLost instead.

// Tags of the detector's control messages (control.go's are below).
const (
	tagProbe   = 2 // coordinator → process: wave number
	tagState   = 3 // process → coordinator: wave, passive, parks, sent, arrived
	tagDeclare = 4 // coordinator → process: the job is deadlocked
	tagReport  = 5 // process → coordinator: its ranks' lines of the report
	tagLeaving = 6 // process → every other: its ranks returned, it leaves
	tagHave    = 7 // coordinator → process: its report came (it may leave)
)

// acrossDetector is one process's side of the detector across processes.
type acrossDetector struct {
	w        *World
	self     int   // this process
	procs    int   // processes in the job
	firstOf  []int // lowest world rank of each process
	local    []int // this process's world ranks
	interval time.Duration
	describe func(PendingRank) string // a rank's line of the report (comm's words)

	returned atomic.Int32 // local ranks that returned (rankDone)

	in     chan ctlMsg
	quit   chan struct{}
	exited chan struct{}

	mu       sync.Mutex
	finished []bool // processes that said goodbye
	declared bool
	done     chan struct{}   // closed once this process's part of a declared deadlock is over
	lines    map[int]string  // coordinator: the job's report, world rank → line
	reported map[int]bool    // coordinator: processes whose report came
	report   []PendingReport // the coordinator's assembled report, by rank
}

// ctlMsg is a control message for the detector, from process proc.
type ctlMsg struct {
	proc    int
	tag     int
	payload []byte
}

// procState is a process's answer to a wave.
type procState struct {
	passive              bool
	parks, sent, arrived uint64
}

// PendingReport is one rank's line of a report across processes.
type PendingReport struct {
	Rank int
	Line string
}

// DetectAcross starts the deadlock detector across processes for a world
// with a device, looking every interval; describe gives a rank's line of
// the report. Every process of the job must start it, or none.
func (w *World) DetectAcross(interval time.Duration, describe func(PendingRank) string) {
	if w.dev == nil || w.across.Load() != nil {
		return
	}
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	d := &acrossDetector{w: w, interval: interval, describe: describe, in: make(chan ctlMsg, 256),
		quit: make(chan struct{}), exited: make(chan struct{}), done: make(chan struct{})}
	for r := range w.eps {
		p := w.process(r)
		for p >= len(d.firstOf) {
			d.firstOf = append(d.firstOf, -1)
		}
		if d.firstOf[p] < 0 {
			d.firstOf[p] = r
		}
		if w.isLocal(r) {
			d.self = p
			d.local = append(d.local, r)
		}
	}
	d.procs = len(d.firstOf)
	d.finished = make([]bool, d.procs)
	w.across.Store(d)
	go d.run()
}

// stop ends the detector (World.Close).
func (d *acrossDetector) stop() {
	close(d.quit)
	<-d.exited
}

// procFinished records that process proc said goodbye.
func (w *World) procFinished(proc int) {
	if d := w.across.Load(); d != nil && proc >= 0 && proc < d.procs {
		d.mu.Lock()
		d.finished[proc] = true
		d.mu.Unlock()
	}
}

// rankDone counts a local rank that returned; once all did, the process
// tells every other that it leaves, before its device says goodbye
// (which reaches only the processes it is connected to): they stop
// asking it, and the next process coordinates when it was the
// coordinator. It waits (up to a second) until the notes are written: a
// device's graceful close drops sends still waiting for their connection.
func (d *acrossDetector) rankDone() {
	if int(d.returned.Add(1)) != len(d.local) || d.w.state.Load() != stateRunning {
		return
	}
	d.w.tellAll(d.local[0], tagLeaving, nil, time.Second)
}

// coordinator returns the lowest process not known to have finished.
func (d *acrossDetector) coordinator() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p, f := range d.finished {
		if !f {
			return p
		}
	}
	return d.self
}

// alive returns the other processes not known to have finished.
func (d *acrossDetector) alive() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ps []int
	for p, f := range d.finished {
		if !f && p != d.self {
			ps = append(ps, p)
		}
	}
	return ps
}

// arrive queues a control message for the detector's goroutine (the
// device's goroutine must not wait for it). A report is taken even once
// the world stopped: the deadlock it reports stops it.
func (w *World) arriveAcross(src, tag int, payload []byte) {
	d := w.across.Load()
	if d == nil {
		return
	}
	select {
	case d.in <- ctlMsg{proc: w.process(src), tag: tag, payload: payload}:
	default: // a flood of questions: the next wave asks again
	}
}

// state returns this process's state now.
func (d *acrossDetector) state() procState {
	w := d.w
	st := procState{passive: true, sent: w.sent.Load(), arrived: w.arrived.Load()}
	var buf []waitRec
	for _, r := range d.local {
		l, blocked := w.eps[r].look(buf[:0])
		buf = l.recs
		st.parks += l.parks
		if !blocked {
			st.passive = false
		}
	}
	if w.pulling.Load() > 0 || w.state.Load() != stateRunning {
		st.passive = false
	}
	return st
}

// run is the detector's goroutine: it answers waves, and runs them when
// this process coordinates.
func (d *acrossDetector) run() {
	defer close(d.exited)
	t := time.NewTicker(d.interval)
	defer t.Stop()
	var (
		wave     uint64
		answers  map[int]procState // this wave's, by process
		asked    time.Time
		prev     map[int]procState // the last complete wave's
		declared bool
	)
	for {
		tick := false
		select {
		case <-d.quit:
			return
		case m := <-d.in:
			switch m.tag {
			case tagProbe:
				if len(m.payload) == 8 {
					d.answer(m.proc, binary.LittleEndian.Uint64(m.payload))
				}
			case tagState:
				if len(m.payload) != 33 || answers == nil || binary.LittleEndian.Uint64(m.payload) != wave {
					continue // a late answer to an abandoned wave
				}
				answers[m.proc] = decodeState(m.payload[8:])
			case tagDeclare:
				if !declared {
					declared = true
					d.fail()
					go d.sendReport(m.proc)
				}
			case tagReport:
				d.takeReport(m.proc, m.payload)
			case tagLeaving:
				d.w.procFinished(m.proc)
			case tagHave:
				d.finish()
			}
		case <-t.C:
			tick = true
		}
		if declared || d.coordinator() != d.self {
			answers, prev = nil, nil
			continue
		}
		if answers != nil && len(answers) == len(d.alive())+1 {
			if prev != nil && quiescent(prev, answers) {
				declared = true
				d.mu.Lock()
				d.declared = true
				d.mu.Unlock()
				d.fail() // before the others fail theirs, leave, and abort this world
				for _, p := range d.alive() {
					d.send(p, tagDeclare, nil)
				}
				go d.sendReport(d.self)
				continue
			}
			prev, answers = answers, nil
		}
		if !tick || answers != nil && time.Since(asked) < 4*d.interval {
			continue // waves start on ticks only; one is under way
		}
		answers = nil // none, or abandoned (a process left meanwhile)
		if st := d.state(); !st.passive {
			prev = nil
			continue
		}
		wave++
		answers, asked = map[int]procState{d.self: d.state()}, time.Now()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], wave)
		for _, p := range d.alive() {
			d.send(p, tagProbe, b[:])
		}
	}
}

// quiescent reports whether two consecutive waves found the job
// deadlocked (see the top of the file).
func quiescent(a, b map[int]procState) bool {
	var sent, arrived uint64
	for p, s := range b {
		t, ok := a[p]
		if !ok || !s.passive || !t.passive || s != t {
			return false
		}
		sent += s.sent
		arrived += s.arrived
	}
	return len(a) == len(b) && sent == arrived
}

// answer sends this process's state for wave to the coordinator proc.
func (d *acrossDetector) answer(proc int, wave uint64) {
	st := d.state()
	b := make([]byte, 33)
	binary.LittleEndian.PutUint64(b, wave)
	if st.passive {
		b[8] = 1
	}
	binary.LittleEndian.PutUint64(b[9:], st.parks)
	binary.LittleEndian.PutUint64(b[17:], st.sent)
	binary.LittleEndian.PutUint64(b[25:], st.arrived)
	d.send(proc, tagState, b)
}

func decodeState(b []byte) procState {
	return procState{passive: b[0] == 1, parks: binary.LittleEndian.Uint64(b[1:]),
		sent: binary.LittleEndian.Uint64(b[9:]), arrived: binary.LittleEndian.Uint64(b[17:])}
}

// send sends a control message to process proc, and waits (briefly) until
// the device wrote it.
func (d *acrossDetector) send(proc, tag int, payload []byte) {
	sent := make(chan error, 1)
	if err := d.w.sendControl(d.local[0], d.firstOf[proc], tag, payload, func(err error) { sent <- err }); err != nil {
		return
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-sent:
	case <-t.C:
	}
}

// takeSend claims send r, which a goroutine of this process is parked on,
// for a declared deadlock or a signal's report, if the device holds it
// still: the device's later completion is then ignored (sendRemote).
func takeSend(r *Request) bool {
	s := r.remote.Load()
	return s&1 == 1 && r.remote.CompareAndSwap(s, s&^1)
}

// failSends completes with err the sends to other processes that the
// device holds and the given ranks' goroutines are parked on (a process
// about to end: AbortReport).
func (w *World) failSends(ranks []int, err error) {
	var fail []*Request
	for _, rank := range ranks {
		ep := &w.eps[rank]
		ep.pmu.Lock()
		for _, p := range ep.parked {
			p.wr.each(func(r *Request) {
				if !r.fired() && takeSend(r) {
					fail = append(fail, r)
				}
			})
		}
		ep.pmu.Unlock()
	}
	for _, r := range fail {
		r.complete(Status{}, err)
	}
}

// fail is this process's part of a deadlock the detector declared: the
// operations its ranks are parked on fail with ErrDeadlock, as the
// in-process detector fails them, and the world records what they were.
func (d *acrossDetector) fail() {
	w := d.w
	w.mu.Lock()
	if w.state.Load() != stateRunning {
		w.mu.Unlock()
		return
	}
	prs := make([]PendingRank, len(d.local))
	var fail []*Request
	for i, r := range d.local {
		ep := &w.eps[r]
		prs[i] = ep.Pending()
		ep.pmu.Lock()
		for _, p := range ep.parked {
			p.wr.each(func(r *Request) {
				if !r.fired() && (r.in != nil && r.in.unqueue(r) || takeSend(r)) {
					fail = append(fail, r)
				}
			})
		}
		ep.pmu.Unlock()
	}
	if w.deadlock == nil {
		w.deadlock = &DeadlockError{Ranks: prs}
	}
	w.mu.Unlock()
	for _, r := range fail {
		r.complete(Status{}, ErrDeadlock)
	}
}

// sendReport sends this process's lines of the report of a declared deadlock
// to the coordinator coord, once its ranks said where they were called.
func (d *acrossDetector) sendReport(coord int) {
	w := d.w
	w.mu.Lock()
	dl := w.deadlock
	w.mu.Unlock()
	if dl == nil {
		d.finish()
		return
	}
	prs := dl.Ranks
	dl.resolve.Do(func() { ResolveSites(prs, 300*time.Millisecond) }) // as World.Deadlock may, meanwhile
	var b strings.Builder
	for _, pr := range prs {
		fmt.Fprintf(&b, "%d\t%s\n", pr.Rank, d.describe(pr))
	}
	if coord == d.self {
		d.takeReport(d.self, []byte(b.String()))
		return
	}
	// done once the coordinator says it has the report (tagHave): leaving
	// before (an aborted world's device closes abruptly) could reset the
	// connection with the report still unread at the other end.
	d.send(coord, tagReport, []byte(b.String()))
}

// takeReport records process proc's lines of the report (coordinator),
// and tells proc it has them; the report is complete once every process
// that was asked sent its own.
func (d *acrossDetector) takeReport(proc int, payload []byte) {
	if proc != d.self {
		defer d.send(proc, tagHave, nil)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lines == nil {
		d.lines, d.reported = map[int]string{}, map[int]bool{}
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(payload), "\n"), "\n") {
		rank, line, ok := strings.Cut(l, "\t")
		if r, err := strconv.Atoi(rank); ok && err == nil {
			d.lines[r] = line
		}
	}
	d.reported[proc] = true
	for p, f := range d.finished {
		if !f && !d.reported[p] {
			return
		}
	}
	if d.declared && d.report == nil {
		d.assemble()
	}
}

// assemble builds the job's report from the lines that came; d.mu held.
func (d *acrossDetector) assemble() {
	d.report = make([]PendingReport, 0, len(d.w.eps))
	for r := range d.w.eps {
		line, ok := d.lines[r]
		switch p := d.w.process(r); {
		case ok:
		case d.finished[p]:
			line = "returned"
		default:
			line = fmt.Sprintf("no report (process %d)", p)
		}
		d.report = append(d.report, PendingReport{Rank: r, Line: line})
	}
	sort.Slice(d.report, func(i, j int) bool { return d.report[i].Rank < d.report[j].Rank })
	d.closeDone()
}

// finish ends this process's part of a declared deadlock.
func (d *acrossDetector) finish() {
	d.mu.Lock()
	d.closeDone()
	d.mu.Unlock()
}

// closeDone closes done once; d.mu held.
func (d *acrossDetector) closeDone() {
	select {
	case <-d.done:
	default:
		close(d.done)
	}
}

// JobDeadlock waits, up to wait, until this process's part of a deadlock
// the detector across processes declared is over, and returns the whole
// job's report when this process coordinated it (nil otherwise: the
// coordinator prints it), and whether this process coordinated. Without
// a declared deadlock it returns at once.
func (w *World) JobDeadlock(wait time.Duration) (report []PendingReport, coordinator bool) {
	d := w.across.Load()
	if d == nil {
		return nil, false
	}
	d.mu.Lock()
	declared := d.declared || d.lines != nil
	d.mu.Unlock()
	if !declared && w.Deadlock() == nil {
		return nil, false
	}
	select {
	case <-d.done:
	case <-time.After(wait):
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.declared {
		return nil, false
	}
	if d.report == nil {
		d.assemble() // some process never sent its part
	}
	return d.report, true
}
