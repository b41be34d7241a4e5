package comm_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Non-blocking collectives that meet in a communicator's table (a
// duplicate's, after a blocking collective set it up; the world's is
// there from the start, and the other tests use it): short ones
// (Ibarrier, Ibcast, Iallreduce, Iallgather, Ialltoall, Ireduce, Igather,
// Iscatter, IreduceScatterBlock, Iscan, Iexscan) completed there by the last
// arriver, long ones and the other collectives started from there, many in
// flight at once, beside point-to-point traffic and blocking collectives,
// in place, on 1–17 and 64 ranks; every result against the sequential
// reference (affine maps: a reduction out of rank order fails).
func TestNonBlockingMeet(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8, 13, 17, 64} {
		for _, mode := range nbModes {
			t.Run(fmt.Sprint(n, "/", mode), func(t *testing.T) {
				testNonBlockingMeet(t, n, mode)
			})
		}
	}
}

// testNonBlockingMeet is TestNonBlockingMeet's case on the communicator
// of mode (nbModes): on a duplicate without a Barrier, the first round's
// calls meet in the table found through the world's, and on one made by
// Create they start on goroutines of their own; either way they are still
// in flight when its blocking Allreduce sets its own table up, where the
// call after it and every later one meet.
func testNonBlockingMeet(t *testing.T, n int, mode string) {
	run(t, n, func(w *comm.Comm) error {
		me := w.Rank()
		w, err := nbComm(w, mode)
		if err != nil {
			return err
		}
		for round := range 3 {
			root := (round*5 + 1) % n
			short, long := 1+round, 5000 // long: 80 KB, through shared memory
			type check struct {
				what      string
				got, want []byte
			}
			var checks []check
			var rs []*comm.Request
			start := func(r *comm.Request, err error) error {
				rs = append(rs, r)
				return err
			}
			if err := start(w.Ibarrier()); err != nil {
				return err
			}
			for _, cnt := range []int{0, short, long} {
				buf := garbage(cnt * esz)
				if me == root {
					copy(buf, ref(root, cnt, 10+cnt))
				}
				if err := start(w.Ibcast(buf, comm.Complex128, root)); err != nil {
					return err
				}
				checks = append(checks, check{fmt.Sprint("ibcast ", cnt), buf, ref(root, cnt, 10+cnt)})
				send, recv := input(me, cnt, 20+cnt), garbage(cnt*esz)
				if err := start(w.Iallreduce(send, recv, comm.Complex128, affine)); err != nil {
					return err
				}
				checks = append(checks, check{fmt.Sprint("iallreduce ", cnt), recv, fold(0, n, cnt, 20+cnt)})
				in := input(me, cnt, 30+cnt)
				if err := start(w.Iallreduce(in, in, comm.Complex128, affine)); err != nil {
					return err
				}
				checks = append(checks, check{fmt.Sprint("iallreduce in place ", cnt), in, fold(0, n, cnt, 30+cnt)})
			}
			gsend, grecv := input(me, short, 40), garbage(n*short*esz)
			if err := start(w.Iallgather(gsend, grecv, comm.Complex128)); err != nil {
				return err
			}
			var want []byte
			for r := range n {
				want = append(want, ref(r, short, 40)...)
			}
			checks = append(checks, check{"iallgather", grecv, want})
			gin := garbage(n * short * esz) // in place: the caller's block is there already
			copy(gin[me*short*esz:], ref(me, short, 40))
			if err := start(w.Iallgather(gin, gin, comm.Complex128)); err != nil {
				return err
			}
			checks = append(checks, check{"iallgather in place", gin, want})
			tsend, trecv := input(me, n*short, 60), garbage(n*short*esz)
			if err := start(w.Ialltoall(tsend, trecv, comm.Complex128)); err != nil {
				return err
			}
			var twant []byte
			for r := range n {
				twant = append(twant, inputAt(r, me*short, short, 60)...)
			}
			checks = append(checks, check{"ialltoall", trecv, twant})
			rsend, rrecv := input(me, short, 70), garbage(short*esz)
			if err := start(w.Ireduce(rsend, rrecv, comm.Complex128, affine, root)); err != nil {
				return err
			}
			rwant := garbage(short * esz)
			if me == root {
				rwant = fold(0, n, short, 70)
			}
			checks = append(checks, check{"ireduce", rrecv, rwant})
			gs, gr := input(me, short, 110), garbage(n*short*esz)
			if err := start(w.Igather(gs, gr, comm.Complex128, root)); err != nil {
				return err
			}
			gwant := garbage(n * short * esz)
			if me == root {
				gwant = nil
				for r := range n {
					gwant = append(gwant, ref(r, short, 110)...)
				}
			}
			checks = append(checks, check{"igather", gr, gwant})
			gip := garbage(n * short * esz) // in place at the root: its block is there already
			copy(gip[me*short*esz:], ref(me, short, 111))
			gipSend := gip
			if me != root {
				gipSend = input(me, short, 111)
			}
			if err := start(w.Igather(gipSend, gip, comm.Complex128, root)); err != nil {
				return err
			}
			if me == root {
				var want []byte
				for r := range n {
					want = append(want, ref(r, short, 111)...)
				}
				checks = append(checks, check{"igather in place", gip, want})
			}
			scs, scr := input(me, n*short, 120), garbage(short*esz)
			if err := start(w.Iscatter(scs, scr, comm.Complex128, root)); err != nil {
				return err
			}
			checks = append(checks, check{"iscatter", scr, inputAt(root, me*short, short, 120)})
			sip := input(me, n*short, 121) // in place at the root: it receives nothing
			sipRecv := sip
			if me != root {
				sipRecv = garbage(short * esz)
			}
			if err := start(w.Iscatter(sip, sipRecv, comm.Complex128, root)); err != nil {
				return err
			}
			if me == root {
				checks = append(checks, check{"iscatter in place", sip, ref(me, n*short, 121)})
			} else {
				checks = append(checks, check{"iscatter in place", sipRecv, inputAt(root, me*short, short, 121)})
			}
			rss, rsr := input(me, n*short, 130), garbage(short*esz)
			if err := start(w.IreduceScatterBlock(rss, rsr, comm.Complex128, affine)); err != nil {
				return err
			}
			checks = append(checks, check{"ireduce_scatter_block", rsr, foldAt(0, n, me*short, short, 130)})
			rip := input(me, n*short, 131)
			if err := start(w.IreduceScatterBlock(rip, rip, comm.Complex128, affine)); err != nil {
				return err
			}
			checks = append(checks, check{"ireduce_scatter_block in place", rip[:short*esz], foldAt(0, n, me*short, short, 131)})
			ssend, srecv := input(me, short, 90), garbage(short*esz)
			if err := start(w.Iscan(ssend, srecv, comm.Complex128, affine)); err != nil {
				return err
			}
			checks = append(checks, check{"iscan", srecv, fold(0, me+1, short, 90)})
			sin := input(me, short, 91)
			if err := start(w.Iscan(sin, sin, comm.Complex128, affine)); err != nil {
				return err
			}
			checks = append(checks, check{"iscan in place", sin, fold(0, me+1, short, 91)})
			xin := input(me, short, 92) // in place: rank 0's stays as it is
			if err := start(w.Iexscan(xin, xin, comm.Complex128, affine)); err != nil {
				return err
			}
			xwant := ref(0, short, 92)
			if me > 0 {
				xwant = fold(0, me, short, 92)
			}
			checks = append(checks, check{"iexscan in place", xin, xwant})
			// Point-to-point and a blocking collective while they
			// are in flight.
			next, prev := (me+1)%n, (me-1+n)%n
			if _, err := w.Sendrecv(payload(8, 1), comm.Byte, next, 0, make([]byte, 8), comm.Byte, prev, 0); err != nil {
				return err
			}
			ar := garbage(2 * esz)
			if err := w.Allreduce(input(me, 2, 50), ar, comm.Complex128, affine); err != nil {
				return err
			}
			checks = append(checks, check{"allreduce", ar, fold(0, n, 2, 50)})
			after := garbage(short * esz)
			if err := start(w.Iallreduce(input(me, short, 80), after, comm.Complex128, affine)); err != nil {
				return err
			}
			checks = append(checks, check{"iallreduce after the allreduce", after, fold(0, n, short, 80)})
			// Completed in another order than started.
			for i := len(rs) - 1; i >= 0; i-- {
				if _, err := rs[i].Wait(); err != nil {
					return fmt.Errorf("round %d, request %d: %w", round, i, err)
				}
			}
			for _, c := range checks {
				if !bytes.Equal(c.got, c.want) {
					return fmt.Errorf("round %d: rank %d: %s: wrong result", round, me, c.what)
				}
			}
		}
		return nil
	})
}

// A rank whose arguments are wrong on their own (here a send buffer of a
// part of an element) fails the call of every member with its error's
// sentinel, in the table as elsewhere; nothing is written, and the
// communicator goes on.
func TestNonBlockingMeetLocalError(t *testing.T) {
	run(t, 4, func(w *comm.Comm) error {
		if err := w.Barrier(); err != nil {
			return err
		}
		send, recv := input(w.Rank(), 3, 1), garbage(3*esz)
		if w.Rank() == 2 {
			send = send[:3*esz-1]
		}
		r, err := w.Iallreduce(send, recv, comm.Complex128, affine)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrArg) && !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("rank %d: %v", w.Rank(), err)
		}
		if !bytes.Equal(recv, garbage(3*esz)) {
			return fmt.Errorf("rank %d: recv written by a failed call", w.Rank())
		}
		return check(w, fold(0, 4, 1, 1))
	})
}

// A member whose request fails while the meeting waits for others (here
// the deadlock detector's verdict on every waiting rank) leaves the
// meeting broken: the member that arrives last afterwards fails with that
// error, and writes no buffer.
func TestNonBlockingMeetBroken(t *testing.T) {
	for name, start := range map[string]func(w *comm.Comm, send, recv []byte) (*comm.Request, error){
		"Iallreduce": func(w *comm.Comm, send, recv []byte) (*comm.Request, error) {
			return w.Iallreduce(send, recv, comm.Complex128, affine)
		},
		"AllreduceInit": func(w *comm.Comm, send, recv []byte) (*comm.Request, error) {
			return started(w.AllreduceInit(send, recv, comm.Complex128, affine))
		},
	} {
		t.Run(name, func(t *testing.T) { testNonBlockingMeetBroken(t, start) })
	}
}

// testNonBlockingMeetBroken is TestNonBlockingMeetBroken's case, with the
// collective that start starts.
func testNonBlockingMeetBroken(t *testing.T, start func(w *comm.Comm, send, recv []byte) (*comm.Request, error)) {
	late := make(chan error, 1)
	err := mpgo.Run(3, func(w *comm.Comm) error {
		send, recv := input(w.Rank(), 2, 1), garbage(2*esz)
		if w.Rank() == 2 {
			_, err := w.Recv(nil, comm.Byte, 0, 5) // never sent: a deadlock
			if !errors.Is(err, comm.ErrDeadlock) {
				return fmt.Errorf("rank 2: Recv = %v", err)
			}
			r, err := start(w, send, recv)
			if err == nil {
				_, err = r.Wait()
			}
			if err != nil && !bytes.Equal(recv, garbage(2*esz)) {
				err = errors.New("recv written by a broken call")
			}
			late <- err
			return nil
		}
		return startWait(w, func(w *comm.Comm) (*comm.Request, error) { return start(w, send, recv) })
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("Run = %v, want a deadlock", err)
	}
	if err := <-late; err == nil {
		t.Fatal("the last arriver's call succeeded after the others failed")
	} else if !errors.Is(err, comm.ErrDeadlock) && !errors.Is(err, comm.ErrAborted) {
		t.Fatalf("the last arriver's call: %v", err)
	}
}

// Many calls in flight at once, more than the table finds by index
// (nbRing): rank 1 starts its only once the others started all of
// theirs, so that most meetings go to the table's map; every one
// completes with its own result.
func TestNonBlockingMeetMany(t *testing.T) {
	const n, calls = 3, 100
	run(t, n, func(w *comm.Comm) error {
		me := w.Rank()
		if me == 1 {
			time.Sleep(5 * time.Millisecond)
		}
		recvs := make([][]byte, calls)
		rs := make([]*comm.Request, calls)
		for i := range calls {
			recvs[i] = garbage(esz)
			var err error
			if rs[i], err = w.Iallreduce(input(me, 1, 100+i), recvs[i], comm.Complex128, affine); err != nil {
				return err
			}
		}
		if err := comm.WaitAll(rs...); err != nil {
			return err
		}
		for i := range calls {
			if !bytes.Equal(recvs[i], fold(0, n, 1, 100+i)) {
				return fmt.Errorf("rank %d: call %d: wrong result", me, i)
			}
		}
		return nil
	})
}

// Communicators that Dup and Split make of one with a table have tables
// of their own at once, found through their parent's, without a blocking
// collective: one per Split group (the groups' calls never meet each
// other's), and a Dup of such a child has one too. Short non-blocking and
// persistent collectives there give the reference's results, and once
// every member took its child's table, the parent keeps none.
func TestNonBlockingChildTables(t *testing.T) {
	const n = 7
	run(t, n, func(w *comm.Comm) error {
		me := w.Rank()
		s, err := w.Split(me%3, -me) // groups of 3, 2 and 2, in reverse order
		if err != nil {
			return err
		}
		d, err := s.Dup()
		if err != nil {
			return err
		}
		for _, c := range []*comm.Comm{s, d} {
			if has, _ := comm.NBTable(c); !has {
				return fmt.Errorf("rank %d: %s has no table", me, c)
			}
			send, recv := make([]byte, 2*esz), garbage(2*esz)
			r, err := c.AllreduceInit(send, recv, comm.Complex128, affine)
			if err != nil {
				return err
			}
			for round := range 4 {
				in, out := input(c.Rank(), 3, round), garbage(3*esz)
				q, err := c.Iallreduce(in, out, comm.Complex128, affine)
				if err != nil {
					return err
				}
				copy(send, ref(c.Rank(), 2, 50+round))
				if err := startWaitOnce(r); err != nil {
					return err
				}
				if _, err := q.Wait(); err != nil {
					return err
				}
				if !bytes.Equal(out, fold(0, c.Size(), 3, round)) || !bytes.Equal(recv, fold(0, c.Size(), 2, 50+round)) {
					return fmt.Errorf("rank %d: %s: round %d: wrong result", me, c, round)
				}
			}
			if err := r.Free(); err != nil {
				return err
			}
		}
		if err := w.Barrier(); err != nil { // every member took its tables
			return err
		}
		for _, c := range []*comm.Comm{w, s} {
			if _, kids := comm.NBTable(c); kids != 0 {
				return fmt.Errorf("rank %d: %s keeps %d children's tables", me, c, kids)
			}
		}
		return nil
	})
}
