package typed_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Struct element types against sequential references: point to point,
// every collective in its blocking, non-blocking and persistent forms
// (every algorithm pinned in turn), neighborhood collectives and layouts,
// for a struct with padding and for an array whose size does not divide
// 64 (so that a reduction split among ranks or into blocks must not cut
// an element).

// particle is a struct element type of 29 bytes of fields in 32.
type particle struct {
	X, Y, Z float64
	ID      int32
	Kind    uint8
}

// structElem is the element types of these tests.
type structElem interface{ particle | [3]float32 }

// sval is element i of rank r's data in case salt: exact in both types.
func sval[T structElem](r, i, salt int) T {
	var v T
	switch p := any(&v).(type) {
	case *particle:
		*p = particle{X: float64(r), Y: float64(i), Z: float64(salt), ID: int32(r*100000 + i), Kind: uint8(i + salt)}
	case *[3]float32:
		*p = [3]float32{float32(r), float32(i), float32(r*1000 + i%1000)}
	}
	return v
}

// svec is rank r's n elements in case salt.
func svec[T structElem](r, n, salt int) []T { return slices.Clone(sref[T](r, n, salt)) }

// sref is svec, read only (the ranks of a run share it).
func sref[T structElem](r, n, salt int) []T {
	return smemo(refKey{reflect.TypeFor[T](), 'v', r, 0, n, salt}, func() []T {
		v := make([]T, n)
		for i := range v {
			v[i] = sval[T](r, i, salt)
		}
		return v
	})
}

// sall is ranks 0..size-1's n elements each, one after the other (read
// only).
func sall[T structElem](size, n, salt int) []T {
	return smemo(refKey{reflect.TypeFor[T](), 'a', 0, size, n, salt}, func() []T {
		var v []T
		for r := range size {
			v = append(v, sref[T](r, n, salt)...)
		}
		return v
	})
}

// scombine is a user operator, associative and not commutative: it sums
// the first field, keeps the lower ranks' second, and takes the higher
// rank's last fields.
func scombine[T structElem](inout, in []T) {
	switch io := any(inout).(type) {
	case []particle:
		in := any(in).([]particle)
		for i := range io {
			io[i].X += in[i].X
			io[i].Z, io[i].ID, io[i].Kind = in[i].Z, in[i].ID, in[i].Kind
		}
	case [][3]float32:
		in := any(in).([][3]float32)
		for i := range io {
			io[i][0] += in[i][0]
			io[i][2] = in[i][2]
		}
	}
}

// sfold is the reduction with scombine of ranks lo..hi-1's n elements
// (read only).
func sfold[T structElem](lo, hi, n, salt int) []T {
	return smemo(refKey{reflect.TypeFor[T](), 'f', lo, hi, n, salt}, func() []T {
		acc := svec[T](lo, n, salt)
		for r := lo + 1; r < hi; r++ {
			scombine(acc, sref[T](r, n, salt))
		}
		return acc
	})
}

// smemo returns the value made once for key, by mk.
func smemo[T any](key refKey, mk func() T) T {
	v, _ := srefs.LoadOrStore(key, new(lazyRef))
	l := v.(*lazyRef)
	l.once.Do(func() { l.v = mk() })
	return l.v.(T)
}

var srefs sync.Map // refKey → *lazyRef

type refKey struct {
	t               reflect.Type
	kind            byte
	lo, hi, n, salt int
}

type lazyRef struct {
	once sync.Once
	v    any
}

// sfill returns n elements no rank sends, for places a call must not
// write.
func sfill[T structElem](n int) []T {
	v, x := make([]T, n), sval[T](-1, -1, -1)
	for i := range v {
		v[i] = x
	}
	return v
}

// form is how a test calls a collective.
type form int

const (
	blocking    form = iota
	nonBlocking      // its I-form, then Wait
	persistent       // its Init form, started and waited for twice, then freed
)

var forms = []form{blocking, nonBlocking, persistent}

// invoke calls a collective in form f, through b, i or p; a form the
// collective lacks (nil) falls back to the blocking call.
func invoke(f form, b func() error, i, p func() (*comm.Request, error)) error {
	switch {
	case f == nonBlocking && i != nil:
		r, err := i()
		if err != nil {
			return err
		}
		_, err = r.Wait()
		return err
	case f == persistent && p != nil:
		r, err := p()
		if err != nil {
			return err
		}
		for range 2 {
			if err := r.Start(); err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
		}
		return r.Free()
	}
	return b()
}

// sallv is rank i's counts[i] elements at displs[i] of total, the rest
// sfill's, for every rank i: what a gatherv collects.
func sallv[T structElem](counts, displs []int, total, salt int) []T {
	v := sfill[T](total)
	for i, k := range counts {
		copy(v[displs[i]:], sref[T](i, k, salt))
	}
	return v
}

// vcounts is rank i's count in the v-collectives' tests of cnt elements.
func vcounts(n, cnt int) (counts, displs []int, total int) {
	counts, displs = make([]int, n), make([]int, n)
	for i := range n {
		counts[i] = (i+cnt)%3 + cnt/2
		displs[i] = total + 1 // a gap before each block, left untouched
		total = displs[i] + counts[i]
	}
	return counts, displs, total
}

func checkEq[T comparable](what string, got, want []T) error {
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		return fmt.Errorf("%s: %d elements differ from %d expected, first at %d", what, len(got), len(want), i)
	}
	return nil
}

// structBcastGather: Bcast, Gather(v), Scatter(v).
func structBcast[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	for _, cnt := range counts(n) {
		root := cnt % n
		buf := sfill[T](cnt)
		if me == root {
			buf = svec[T](root, cnt, 1)
		}
		err := invoke(f, func() error { return c.Bcast(buf, root) },
			func() (*comm.Request, error) { return c.Ibcast(buf, root) },
			func() (*comm.Request, error) { return c.BcastInit(buf, root) })
		if err != nil {
			return err
		}
		if err := checkEq(fmt.Sprint("bcast of ", cnt), buf, sref[T](root, cnt, 1)); err != nil {
			return err
		}
	}
	return nil
}

func structGather[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	for _, cnt := range counts(n) {
		cnt = min(cnt, 4000) // n blocks
		root := (cnt + 1) % n
		send := svec[T](me, cnt, 2)
		recv := sfill[T](n * cnt)
		err := invoke(f, func() error { return c.Gather(send, recv, root) },
			func() (*comm.Request, error) { return c.Igather(send, recv, root) }, nil)
		if err != nil {
			return err
		}
		if me == root {
			if err := checkEq(fmt.Sprint("gather of ", cnt), recv, sall[T](n, cnt, 2)); err != nil {
				return err
			}
		}
		counts, displs, total := vcounts(n, cnt)
		send = svec[T](me, counts[me], 3)
		recv = sfill[T](total)
		err = invoke(f, func() error { return c.Gatherv(send, recv, counts, displs, root) },
			func() (*comm.Request, error) { return c.Igatherv(send, recv, counts, displs, root) }, nil)
		if err != nil {
			return err
		}
		if me == root {
			if err := checkEq(fmt.Sprint("gatherv of ", cnt), recv, sallv[T](counts, displs, total, 3)); err != nil {
				return err
			}
		}
	}
	return nil
}

func structScatter[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	for _, cnt := range counts(n) {
		root := (cnt + 2) % n
		var send []T
		if me == root {
			send = svec[T](root, n*cnt, 4)
		}
		recv := sfill[T](cnt)
		err := invoke(f, func() error { return c.Scatter(send, recv, root) },
			func() (*comm.Request, error) { return c.Iscatter(send, recv, root) }, nil)
		if err != nil {
			return err
		}
		if err := checkEq(fmt.Sprint("scatter of ", cnt), recv, sref[T](root, n*cnt, 4)[me*cnt:][:cnt]); err != nil {
			return err
		}
		counts, displs, total := vcounts(n, cnt)
		if me == root {
			send = svec[T](root, total, 5)
		}
		recv = sfill[T](counts[me])
		err = invoke(f, func() error { return c.Scatterv(send, counts, displs, recv, root) },
			func() (*comm.Request, error) { return c.Iscatterv(send, counts, displs, recv, root) }, nil)
		if err != nil {
			return err
		}
		if err := checkEq(fmt.Sprint("scatterv of ", cnt), recv, sref[T](root, total, 5)[displs[me]:][:counts[me]]); err != nil {
			return err
		}
	}
	return nil
}

func structAllgather[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	for _, cnt := range counts(n) {
		cnt = min(cnt, 4000) // n blocks
		send := svec[T](me, cnt, 6)
		recv := sfill[T](n * cnt)
		err := invoke(f, func() error { return c.Allgather(send, recv) },
			func() (*comm.Request, error) { return c.Iallgather(send, recv) },
			func() (*comm.Request, error) { return c.AllgatherInit(send, recv) })
		if err != nil {
			return err
		}
		if err := checkEq(fmt.Sprint("allgather of ", cnt), recv, sall[T](n, cnt, 6)); err != nil {
			return err
		}
		counts, displs, total := vcounts(n, cnt)
		send = svec[T](me, counts[me], 7)
		recv = sfill[T](total)
		err = invoke(f, func() error { return c.Allgatherv(send, recv, counts, displs) },
			func() (*comm.Request, error) { return c.Iallgatherv(send, recv, counts, displs) }, nil)
		if err != nil {
			return err
		}
		if err := checkEq(fmt.Sprint("allgatherv of ", cnt), recv, sallv[T](counts, displs, total, 7)); err != nil {
			return err
		}
	}
	return nil
}

func structAlltoall[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	for _, cnt := range counts(n) {
		cnt = min(cnt, 300) // n² blocks
		send := svec[T](me, n*cnt, 8)
		recv := sfill[T](n * cnt)
		err := invoke(f, func() error { return c.Alltoall(send, recv) },
			func() (*comm.Request, error) { return c.Ialltoall(send, recv) },
			func() (*comm.Request, error) { return c.AlltoallInit(send, recv) })
		if err != nil {
			return err
		}
		var want []T
		for i := range n {
			want = append(want, sref[T](i, n*cnt, 8)[me*cnt:][:cnt]...)
		}
		if err := checkEq(fmt.Sprint("alltoall of ", cnt), recv, want); err != nil {
			return err
		}
		// Rank i sends (i+j)%3 + cnt/4 elements to rank j, packed.
		count := func(i, j int) int { return (i+j)%3 + cnt/4 }
		scounts, rcounts := make([]int, n), make([]int, n)
		stotal, rtotal := 0, 0
		for j := range n {
			scounts[j], rcounts[j] = count(me, j), count(j, me)
			stotal, rtotal = stotal+scounts[j], rtotal+rcounts[j]
		}
		send, recv = svec[T](me, stotal, 9), sfill[T](rtotal)
		err = invoke(f, func() error { return c.Alltoallv(send, scounts, nil, recv, rcounts, nil) },
			func() (*comm.Request, error) { return c.Ialltoallv(send, scounts, nil, recv, rcounts, nil) }, nil)
		if err != nil {
			return err
		}
		want = nil
		for i := range n {
			off := 0
			for j := range me {
				off += count(i, j)
			}
			want = append(want, sref[T](i, off+count(i, me), 9)[off:]...)
		}
		if err := checkEq(fmt.Sprint("alltoallv of ", cnt), recv, want); err != nil {
			return err
		}
	}
	return nil
}

// The reductions, with a user operator: Reduce, Allreduce,
// ReduceScatter(Block), Scan and Exscan.

func structReduce[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	op := typed.Op[T](scombine[T])
	for _, cnt := range counts(n) {
		root := cnt % n
		send := svec[T](me, cnt, 10)
		recv := sfill[T](cnt)
		err := invoke(f, func() error { return c.Reduce(send, recv, op, root) },
			func() (*comm.Request, error) { return c.Ireduce(send, recv, op, root) },
			func() (*comm.Request, error) { return c.ReduceInit(send, recv, op, root) })
		if err != nil {
			return err
		}
		if me == root {
			if err := checkEq(fmt.Sprint("reduce of ", cnt), recv, sfold[T](0, n, cnt, 10)); err != nil {
				return err
			}
		}
	}
	return nil
}

func structAllreduce[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	op := typed.Op[T](scombine[T])
	for _, cnt := range counts(n) {
		send := svec[T](me, cnt, 10)
		recv := sfill[T](cnt)
		err := invoke(f, func() error { return c.Allreduce(send, recv, op) },
			func() (*comm.Request, error) { return c.Iallreduce(send, recv, op) },
			func() (*comm.Request, error) { return c.AllreduceInit(send, recv, op) })
		if err != nil {
			return err
		}
		if err := checkEq(fmt.Sprint("allreduce of ", cnt), recv, sfold[T](0, n, cnt, 10)); err != nil {
			return err
		}
	}
	return nil
}

func structScan[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	op := typed.Op[T](scombine[T])
	for _, cnt := range counts(n) {
		send := svec[T](me, cnt, 10)
		recv := sfill[T](cnt)
		err := invoke(f, func() error { return c.Scan(send, recv, op) },
			func() (*comm.Request, error) { return c.Iscan(send, recv, op) }, nil)
		if err != nil {
			return err
		}
		if err := checkEq(fmt.Sprint("scan of ", cnt), recv, sfold[T](0, me+1, cnt, 10)); err != nil {
			return err
		}
		recv = sfill[T](cnt)
		err = invoke(f, func() error { return c.Exscan(send, recv, op) },
			func() (*comm.Request, error) { return c.Iexscan(send, recv, op) }, nil)
		if err != nil {
			return err
		}
		want := sfill[T](cnt)
		if me > 0 {
			want = sfold[T](0, me, cnt, 10)
		}
		if err := checkEq(fmt.Sprint("exscan of ", cnt), recv, want); err != nil {
			return err
		}
	}
	return nil
}

func structReduceScatter[T structElem](w *comm.Comm, f form) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	op := typed.Op[T](scombine[T])
	for _, cnt := range counts(n) {
		cnt = min(cnt, 1000) // n blocks
		send := svec[T](me, n*cnt, 11)
		recv := sfill[T](cnt)
		err := invoke(f, func() error { return c.ReduceScatterBlock(send, recv, op) },
			func() (*comm.Request, error) { return c.IreduceScatterBlock(send, recv, op) }, nil)
		if err != nil {
			return err
		}
		if err := checkEq(fmt.Sprint("reduce-scatter-block of ", cnt), recv, sfold[T](0, n, n*cnt, 11)[me*cnt:][:cnt]); err != nil {
			return err
		}
		if f == blocking {
			counts, _, _ := vcounts(n, cnt)
			total, lo := 0, 0
			for i, k := range counts {
				if i == me {
					lo = total
				}
				total += k
			}
			send, recv = svec[T](me, total, 12), sfill[T](counts[me])
			if err := c.ReduceScatter(send, recv, counts, op); err != nil {
				return err
			}
			if err := checkEq(fmt.Sprint("reduce-scatter of ", cnt), recv, sfold[T](0, n, total, 12)[lo:][:counts[me]]); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestStructCollectives(t *testing.T) {
	for _, c := range []struct {
		name     string
		coll     comm.Collective
		particle func(*comm.Comm, form) error
		array    func(*comm.Comm, form) error
	}{
		{"bcast", comm.CollBcast, structBcast[particle], structBcast[[3]float32]},
		{"gather", comm.CollGather, structGather[particle], structGather[[3]float32]},
		{"scatter", comm.CollScatter, structScatter[particle], structScatter[[3]float32]},
		{"allgather", comm.CollAllgather, structAllgather[particle], structAllgather[[3]float32]},
		{"alltoall", comm.CollAlltoall, structAlltoall[particle], structAlltoall[[3]float32]},
		{"reduce", comm.CollReduce, structReduce[particle], structReduce[[3]float32]},
		{"allreduce", comm.CollAllreduce, structAllreduce[particle], structAllreduce[[3]float32]},
		{"reduce-scatter", comm.CollReduceScatter, structReduceScatter[particle], structReduceScatter[[3]float32]},
		{"scan", comm.CollScan, structScan[particle], structScan[[3]float32]},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachOn(t, structRankCounts(), c.coll, func(w *comm.Comm) error {
				for _, f := range forms {
					if err := c.particle(w, f); err != nil {
						return fmt.Errorf("particle, form %d: %w", f, err)
					}
					if err := c.array(w, f); err != nil {
						return fmt.Errorf("[3]float32, form %d: %w", f, err)
					}
				}
				return nil
			})
		})
	}
}

// structRing passes each rank's data to the next rank around a ring in
// every point-to-point form; rank r checks what came from r-1.
func structRing[T structElem](w *comm.Comm) error {
	c, n, me := typed.Of[T](w), w.Size(), w.Rank()
	next, prev := (me+1)%n, (me+n-1)%n
	for salt, cnt := range []int{0, 1, 7, 3000} { // 3000 particles: a rendezvous
		want := svec[T](prev, cnt, salt)
		send := svec[T](me, cnt, salt)
		check := func(form string, got []T, st comm.Status) error {
			if st.Count != cnt || st.Source != prev && n > 1 {
				return fmt.Errorf("%s of %d: status %v", form, cnt, st)
			}
			return checkEq(fmt.Sprint(form, " of ", cnt), got, want)
		}
		recv := sfill[T](cnt)
		st, err := c.Sendrecv(send, next, 1, recv, prev, 1)
		if err != nil {
			return err
		}
		if err := check("sendrecv", recv, st); err != nil {
			return err
		}
		recv = sfill[T](cnt)
		rr, err := c.Irecv(recv, prev, 2)
		if err != nil {
			return err
		}
		sr, err := c.Issend(send, next, 2)
		if err != nil {
			return err
		}
		if _, err := sr.Wait(); err != nil {
			return err
		}
		if st, err = rr.Wait(); err != nil {
			return err
		}
		if err := check("irecv/issend", recv, st); err != nil {
			return err
		}
		recv = sfill[T](cnt)
		ps, err := c.SendInit(send, next, 3)
		if err != nil {
			return err
		}
		pr, err := c.RecvInit(recv, prev, 3)
		if err != nil {
			return err
		}
		for range 2 {
			if err := comm.StartAll(pr, ps); err != nil {
				return err
			}
			if err := comm.WaitAll(ps, pr); err != nil {
				return err
			}
		}
		if err := errors.Join(ps.Free(), pr.Free()); err != nil {
			return err
		}
		if err := check("persistent", recv, comm.Status{Source: prev, Count: cnt}); err != nil {
			return err
		}
		buf := slices.Clone(send)
		if st, err = c.SendrecvReplace(buf, next, 4, prev, 4); err != nil {
			return err
		}
		if err := check("sendrecv-replace", buf, st); err != nil {
			return err
		}
		sr, err = c.Isend(send, next, 5)
		if err != nil {
			return err
		}
		if st, err = c.Probe(prev, 5); err != nil || st.Count != cnt {
			return fmt.Errorf("probe of %d: %v %v", cnt, st, err)
		}
		m, st, err := c.Mprobe(prev, 5)
		if err != nil {
			return err
		}
		recv = sfill[T](cnt)
		if st, err = c.Mrecv(m, recv); err != nil {
			return err
		}
		if err := check("mprobe/mrecv", recv, st); err != nil {
			return err
		}
		if _, err := sr.Wait(); err != nil {
			return err
		}
		sr, err = c.Isend(send, next, 6)
		if err != nil {
			return err
		}
		got, st, err := c.RecvOwned(prev, 6)
		if err != nil {
			return err
		}
		if err := check("recv-owned", got, st); err != nil {
			return err
		}
		if _, err := sr.Wait(); err != nil {
			return err
		}
		if n > 1 { // a blocking handoff to oneself waits for itself
			own := slices.Clone(send)
			if me%2 == 0 {
				err = c.SendOwned(own, next, 7)
				if err == nil {
					got, st, err = c.RecvOwned(prev, 7)
				}
			} else {
				got, st, err = c.RecvOwned(prev, 7)
				if err == nil {
					err = c.SendOwned(own, next, 7)
				}
			}
			if err != nil {
				return err
			}
			if err := check("send-owned", got, st); err != nil {
				return err
			}
		}
	}
	return nil
}

// structRankCounts is 1 to 17 ranks, and 64: the 256 of rankCounts adds
// minutes under -race and nothing the others do not show.
func structRankCounts() []int {
	return append(slices.DeleteFunc(rankCounts(), func(n int) bool { return n > 17 }), 64)
}

func TestStructP2P(t *testing.T) {
	for _, n := range structRankCounts() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			err := mpgo.Run(n, func(w *comm.Comm) error {
				return errors.Join(structRing[particle](w), structRing[[3]float32](w))
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A 1-d periodic grid: each rank's in- and out-neighbors are the ranks
// below and above it, and a neighbor alltoall's block 0 comes from the
// rank below, which sent it its block 1 (and the other way round).
func structNeighbors[T structElem](w *comm.Comm, f form) error {
	n, me := w.Size(), w.Rank()
	cart, err := w.CartCreate([]int{n}, []bool{true}, false)
	if err != nil {
		return err
	}
	defer cart.Free()
	below, above := (me+n-1)%n, (me+1)%n
	const k = 5
	send := svec[T](me, k, 20)
	recv := sfill[T](2 * k)
	err = invoke(f, func() error { return typed.NeighborAllgather(cart, send, recv) },
		func() (*comm.Request, error) { return typed.IneighborAllgather(cart, send, recv) },
		func() (*comm.Request, error) { return typed.NeighborAllgatherInit(cart, send, recv) })
	if err != nil {
		return err
	}
	if err := checkEq("neighbor allgather", recv, append(svec[T](below, k, 20), svec[T](above, k, 20)...)); err != nil {
		return err
	}
	send, recv = svec[T](me, 2*k, 21), sfill[T](2*k)
	err = invoke(f, func() error { return typed.NeighborAlltoall(cart, send, recv) },
		func() (*comm.Request, error) { return typed.IneighborAlltoall(cart, send, recv) },
		func() (*comm.Request, error) { return typed.NeighborAlltoallInit(cart, send, recv) })
	if err != nil {
		return err
	}
	if err := checkEq("neighbor alltoall", recv, append(svec[T](below, 2*k, 21)[k:], svec[T](above, 2*k, 21)[:k]...)); err != nil {
		return err
	}
	// v-forms: rank r sends r%3+1 elements (allgatherv), or block i of
	// r%3+i+1 (alltoallv); gaps between the receive blocks stay untouched.
	cnt := func(r int) int { return r%3 + 1 }
	send = svec[T](me, cnt(me), 22)
	counts, displs := []int{cnt(below), cnt(above)}, []int{1, cnt(below) + 2}
	recv = sfill[T](displs[1] + counts[1])
	err = invoke(f, func() error { return typed.NeighborAllgatherv(cart, send, recv, counts, displs) },
		func() (*comm.Request, error) { return typed.IneighborAllgatherv(cart, send, recv, counts, displs) },
		func() (*comm.Request, error) { return typed.NeighborAllgathervInit(cart, send, recv, counts, displs) })
	if err != nil {
		return err
	}
	want := sfill[T](len(recv))
	copy(want[displs[0]:], svec[T](below, cnt(below), 22))
	copy(want[displs[1]:], svec[T](above, cnt(above), 22))
	if err := checkEq("neighbor allgatherv", recv, want); err != nil {
		return err
	}
	block := func(r, i int) int { return r%3 + i + 1 } // rank r's send block i
	sc := []int{block(me, 0), block(me, 1)}
	send = svec[T](me, sc[0]+sc[1], 23)
	rc := []int{block(below, 1), block(above, 0)}
	rd := []int{0, rc[0] + 1}
	recv = sfill[T](rd[1] + rc[1])
	err = invoke(f, func() error { return typed.NeighborAlltoallv(cart, send, sc, nil, recv, rc, rd) },
		func() (*comm.Request, error) { return typed.IneighborAlltoallv(cart, send, sc, nil, recv, rc, rd) },
		func() (*comm.Request, error) { return typed.NeighborAlltoallvInit(cart, send, sc, nil, recv, rc, rd) })
	if err != nil {
		return err
	}
	want = sfill[T](len(recv))
	copy(want, svec[T](below, block(below, 0)+block(below, 1), 23)[block(below, 0):])
	copy(want[rd[1]:], svec[T](above, block(above, 0), 23))
	return checkEq("neighbor alltoallv", recv, want)
}

func TestStructNeighbors(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			err := mpgo.Run(n, func(w *comm.Comm) error {
				for _, f := range forms {
					if err := errors.Join(structNeighbors[particle](w, f), structNeighbors[[3]float32](w, f)); err != nil {
						return fmt.Errorf("form %d: %w", f, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Layouts over slices of structs: a column of a grid of particles, sent
// strided and received contiguous, indexed, and strided into another
// grid; Pack and Unpack agree with the reference.
func TestStructLayouts(t *testing.T) {
	const rows, cols = 40, 7 // a column of 40 particles; 400 rows: a rendezvous
	for _, rows := range []int{rows, 10 * rows} {
		grid := svec[particle](0, rows*cols, 30) // row-major: element (i, j) at i*cols+j
		column := func(g []particle, j int) []particle {
			out := make([]particle, rows)
			for i := range out {
				out[i] = g[i*cols+j]
			}
			return out
		}
		col, err := typed.Vector(rows, 1, cols)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := typed.Indexed([]int{1, 2, rows - 3}, []int{0, 2, 5}) // rows elements with gaps
		if err != nil {
			t.Fatal(err)
		}
		packed := make([]particle, rows)
		if _, err := typed.Pack(packed, grid[3:], col); err != nil {
			t.Fatal(err)
		}
		if err := checkEq("pack", packed, column(grid, 3)); err != nil {
			t.Fatal(err)
		}
		back := sfill[particle](rows * cols)
		if _, err := typed.Unpack(back[3:], packed, col); err != nil {
			t.Fatal(err)
		}
		if err := checkEq("unpack", column(back, 3), column(grid, 3)); err != nil {
			t.Fatal(err)
		}
		err = mpgo.Run(2, func(w *comm.Comm) error {
			c := typed.Of[particle](w)
			if w.Rank() == 0 {
				for j := range 3 {
					if err := c.SendLayout(grid[j:], col, 1, j); err != nil {
						return err
					}
				}
				return nil
			}
			got := sfill[particle](rows)
			if _, err := c.Recv(got, 0, 0); err != nil {
				return err
			}
			if err := checkEq("column received contiguous", got, column(grid, 0)); err != nil {
				return err
			}
			sparse := sfill[particle](idx.Extent())
			if _, err := c.RecvLayout(sparse, idx, 0, 1); err != nil {
				return err
			}
			want := sfill[particle](idx.Extent())
			if _, err := typed.Unpack(want, column(grid, 1), idx); err != nil {
				return err
			}
			if err := checkEq("column received indexed", sparse, want); err != nil {
				return err
			}
			other := sfill[particle](rows * cols)
			q, err := c.IrecvLayout(other[5:], col, 0, 2)
			if err != nil {
				return err
			}
			if _, err := q.Wait(); err != nil {
				return err
			}
			return checkEq("column received strided", column(other, 5), column(grid, 2))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Struct types of the mismatch tests: otherParticle has particle's size
// and fields in another order; sameParticle has particle's layout under
// other names, and is interchangeable with it.
type (
	otherParticle struct {
		ID      int32
		Kind    uint8
		X, Y, Z float64
	}
	sameParticle struct {
		A, B, C float64
		N       int32
		K       uint8
	}
)

// A receive of another struct type, of an array or number type of the
// same size, fails with ErrType naming both types; of the same layout, or
// of bytes, it succeeds.
func TestStructMismatchP2P(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[particle](w)
		const k = 4
		for _, cnt := range []int{k, 4000} { // eager and rendezvous
			if w.Rank() == 0 {
				for range 5 {
					if err := c.Send(svec[particle](0, cnt, 40), 1, cnt); err != nil {
						return err
					}
				}
				continue
			}
			mismatch := func(what string, recv func() (comm.Status, error)) error {
				_, err := recv()
				if !errors.Is(err, comm.ErrType) || !strings.Contains(err.Error(), "typed_test.particle") {
					return fmt.Errorf("particles received as %s: %v, want ErrType naming particle", what, err)
				}
				return nil
			}
			if err := errors.Join(
				mismatch("otherParticle", func() (comm.Status, error) {
					return typed.Of[otherParticle](w).Recv(make([]otherParticle, cnt), 0, cnt)
				}),
				mismatch("[4]float64", func() (comm.Status, error) {
					return typed.Of[[4]float64](w).Recv(make([][4]float64, cnt), 0, cnt)
				}),
				mismatch("float64", func() (comm.Status, error) {
					return typed.Of[float64](w).Recv(make([]float64, 4*cnt), 0, cnt)
				}),
			); err != nil {
				return err
			}
			same := make([]sameParticle, cnt)
			if st, err := typed.Of[sameParticle](w).Recv(same, 0, cnt); err != nil || st.Count != cnt {
				return fmt.Errorf("particles received as sameParticle: %v %v", st, err)
			}
			if want := svec[particle](0, cnt, 40)[cnt-1]; same[cnt-1].A != want.X || same[cnt-1].N != want.ID {
				return fmt.Errorf("sameParticle %+v, want %+v", same[cnt-1], want)
			}
			raw := make([]byte, cnt*32)
			if st, err := typed.Of[byte](w).Recv(raw, 0, cnt); err != nil || st.Count != len(raw) {
				return fmt.Errorf("particles received as bytes: %v %v", st, err)
			}
		}
		// And the other way round: numbers received as particles.
		if w.Rank() == 0 {
			return typed.Of[float64](w).Send(make([]float64, 4*k), 1, 9)
		}
		_, err := c.Recv(make([]particle, k), 0, 9)
		if !errors.Is(err, comm.ErrType) || !strings.Contains(err.Error(), "float64") {
			return fmt.Errorf("float64 received as particles: %v, want ErrType", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Collectives of mismatched element types fail with ErrType on every
// rank, with every algorithm (as number types do), and the communicator
// stays usable.
func TestStructMismatchCollectives(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			each1 := func(coll comm.Collective, call func(w *comm.Comm, odd bool) error) {
				errs := make([]error, n)
				err := mpgo.Run(n, func(w *comm.Comm) error {
					for _, alg := range append([]comm.Algorithm{comm.AlgAuto}, comm.Algorithms(coll)...) {
						if alg == comm.AlgHierarchical {
							continue
						}
						if err := w.SetAlgorithm(coll, alg); err != nil {
							return err
						}
						err := call(w, w.Rank() == n-1)
						if !errors.Is(err, comm.ErrType) {
							errs[w.Rank()] = fmt.Errorf("%v %v: rank %d: %v, want ErrType", coll, alg, w.Rank(), err)
						}
						if err := w.Barrier(); err != nil {
							return err
						}
					}
					return nil
				})
				if err := errors.Join(append(errs, err)...); err != nil {
					t.Error(err)
				}
			}
			each1(comm.CollAllreduce, func(w *comm.Comm, odd bool) error {
				if odd {
					return typed.Of[otherParticle](w).Allreduce(make([]otherParticle, 100), make([]otherParticle, 100), func(a, b []otherParticle) {})
				}
				return typed.Of[particle](w).Allreduce(make([]particle, 100), make([]particle, 100), scombine)
			})
			each1(comm.CollAllgather, func(w *comm.Comm, odd bool) error {
				if odd {
					return typed.Of[[4]float64](w).Allgather(make([][4]float64, 3), make([][4]float64, 3*n))
				}
				return typed.Of[particle](w).Allgather(make([]particle, 3), make([]particle, 3*n))
			})
			each1(comm.CollAlltoall, func(w *comm.Comm, odd bool) error {
				if odd {
					return typed.Of[complex128](w).Alltoall(make([]complex128, 4*n), make([]complex128, 4*n))
				}
				return typed.Of[particle](w).Alltoall(make([]particle, 2*n), make([]particle, 2*n))
			})
		})
	}
}

// Of panics on a type that cannot travel as its memory, with an error
// that wraps comm.ErrType and names the type; in a run, that fails the
// rank.
func TestStructOfRejects(t *testing.T) {
	type withPointer struct {
		X    float64
		Next *particle
	}
	type withString struct {
		ID   int
		Name string
	}
	check := func(name string, of func()) {
		defer func() {
			p := recover()
			err, ok := p.(error)
			if !ok || !errors.Is(err, comm.ErrType) || !strings.Contains(err.Error(), name) {
				t.Errorf("Of[%s]: panic %v, want an error wrapping ErrType naming the type", name, p)
			}
		}()
		of()
	}
	check("withPointer", func() { typed.Of[withPointer](nil) })
	check("withString", func() { typed.Of[withString](nil) })
	check("[]typed_test.particle", func() { typed.Of[[]particle](nil) })
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			typed.Of[withPointer](w)
		}
		return w.Barrier()
	})
	var re *mpgo.RankError
	if !errors.As(err, &re) || re.Rank != 1 || !strings.Contains(fmt.Sprint(re.Panic), "Next (*typed_test.particle) is a pointer") {
		t.Errorf("run: %v, want rank 1's panic naming the pointer", err)
	}
}
