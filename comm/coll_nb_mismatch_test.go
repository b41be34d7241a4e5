package comm_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// The non-blocking and persistent collectives check what their blocking
// forms check: a root, an element type, a count or the collective itself
// that differs on one rank fails, with the same sentinel, on every rank
// where the blocking form (on goroutine ranks, sharing memory) fails.
// Issue 23 found Ibcast with different roots returning nil everywhere,
// with buffers that disagreed.
func TestNonBlockingMismatch(t *testing.T) {
	const n, cnt, bad = 4, 3, 1
	rooted := map[string]bool{"bcast": true, "reduce": true, "gather": true, "gatherv": true, "scatter": true, "scatterv": true}
	persistent := map[string]bool{"bcast": true, "reduce": true, "allreduce": true, "allgather": true, "alltoall": true}
	names := []string{"bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv", "allgather",
		"allgatherv", "alltoall", "alltoallv", "reduce_scatter_block", "scan", "exscan"}
	for _, name := range names {
		for _, what := range []string{"root", "type", "count", "collective"} {
			if what == "root" && !rooted[name] {
				continue
			}
			t.Run(name+"/"+what, func(t *testing.T) {
				other := "bcast" // the collective the bad rank calls instead
				if name == "bcast" {
					other = "allreduce"
				}
				args := func(w *comm.Comm) (string, int, comm.Type, int) {
					name, root, typ, c := name, 0, comm.Complex128, cnt
					if w.Rank() == bad {
						switch what {
						case "root":
							root = 2
						case "type":
							typ = comm.Int64 // as many bytes, another type
						case "count":
							c = cnt + 1
						case "collective":
							name = other
						}
					}
					return name, root, typ, c
				}
				outcome := func(form string) []error {
					errs := make([]error, n)
					run(t, n, func(w *comm.Comm) error {
						name, root, typ, c := args(w)
						errs[w.Rank()] = callColl(w, name, form, root, typ, c)
						return check(w, fold(0, n, 1, 1)) // still usable
					})
					return errs
				}
				want := outcome("blocking")
				forms := []string{"non-blocking", "dup", "dup-barrier"}
				if persistent[name] && what != "collective" {
					forms = append(forms, "persistent")
				}
				for _, form := range forms {
					got := outcome(form)
					for r := range n {
						for _, s := range []error{comm.ErrArg, comm.ErrType, comm.ErrTruncate, comm.ErrRank} {
							if errors.Is(want[r], s) && !errors.Is(got[r], s) {
								t.Errorf("%s: rank %d: %v; the blocking form: %v", form, r, got[r], want[r])
							}
						}
					}
				}
			})
		}
	}
}

// callColl runs the collective name of cnt complex128s' worth of elements
// of typ (rooted at root where it has a root) in form: blocking,
// non-blocking (started and waited for; on the world, or as nbModes
// names, on a duplicate: dup or dup-barrier) or persistent (planned,
// started, waited for and freed).
func callColl(w *comm.Comm, name, form string, root int, typ comm.Type, cnt int) error {
	if form == "dup" || form == "dup-barrier" {
		d, err := nbComm(w, form)
		if err != nil {
			return err
		}
		w, form = d, "non-blocking"
	}
	n, me := w.Size(), w.Rank()
	k := cnt * esz / typ.Size() // elements of typ
	b := func(c int) []byte { return garbage(c * esz) }
	in := func(c int) []byte { return input(me, c, 1) }
	counts := slices.Repeat([]int{k}, n)
	var blocking func() error
	var start, plan func() (*comm.Request, error)
	switch name {
	case "bcast":
		buf := in(cnt)
		blocking = func() error { return w.Bcast(buf, typ, root) }
		start = func() (*comm.Request, error) { return w.Ibcast(buf, typ, root) }
		plan = func() (*comm.Request, error) { return w.BcastInit(buf, typ, root) }
	case "reduce":
		send, recv := in(cnt), b(cnt)
		blocking = func() error { return w.Reduce(send, recv, typ, affine, root) }
		start = func() (*comm.Request, error) { return w.Ireduce(send, recv, typ, affine, root) }
		plan = func() (*comm.Request, error) { return w.ReduceInit(send, recv, typ, affine, root) }
	case "allreduce":
		send, recv := in(cnt), b(cnt)
		blocking = func() error { return w.Allreduce(send, recv, typ, affine) }
		start = func() (*comm.Request, error) { return w.Iallreduce(send, recv, typ, affine) }
		plan = func() (*comm.Request, error) { return w.AllreduceInit(send, recv, typ, affine) }
	case "gather":
		send, recv := in(cnt), b(n*cnt)
		blocking = func() error { return w.Gather(send, recv, typ, root) }
		start = func() (*comm.Request, error) { return w.Igather(send, recv, typ, root) }
	case "gatherv":
		send, recv := in(cnt), b(n*(cnt+1))
		blocking = func() error { return w.Gatherv(send, recv, counts, nil, typ, root) }
		start = func() (*comm.Request, error) { return w.Igatherv(send, recv, counts, nil, typ, root) }
	case "scatter":
		send, recv := in(n*cnt), b(cnt)
		blocking = func() error { return w.Scatter(send, recv, typ, root) }
		start = func() (*comm.Request, error) { return w.Iscatter(send, recv, typ, root) }
	case "scatterv":
		send, recv := in(n*cnt), b(cnt)
		blocking = func() error { return w.Scatterv(send, counts, nil, recv, typ, root) }
		start = func() (*comm.Request, error) { return w.Iscatterv(send, counts, nil, recv, typ, root) }
	case "allgather":
		send, recv := in(cnt), b(n*cnt)
		blocking = func() error { return w.Allgather(send, recv, typ) }
		start = func() (*comm.Request, error) { return w.Iallgather(send, recv, typ) }
		plan = func() (*comm.Request, error) { return w.AllgatherInit(send, recv, typ) }
	case "allgatherv":
		send, recv := in(cnt), b(n*cnt)
		blocking = func() error { return w.Allgatherv(send, recv, counts, nil, typ) }
		start = func() (*comm.Request, error) { return w.Iallgatherv(send, recv, counts, nil, typ) }
	case "alltoall":
		send, recv := in(n*cnt), b(n*cnt)
		blocking = func() error { return w.Alltoall(send, recv, typ) }
		start = func() (*comm.Request, error) { return w.Ialltoall(send, recv, typ) }
		plan = func() (*comm.Request, error) { return w.AlltoallInit(send, recv, typ) }
	case "alltoallv":
		send, recv := in(n*cnt), b(n*cnt)
		blocking = func() error { return w.Alltoallv(send, counts, nil, recv, counts, nil, typ) }
		start = func() (*comm.Request, error) { return w.Ialltoallv(send, counts, nil, recv, counts, nil, typ) }
	case "reduce_scatter_block":
		send, recv := in(n*cnt), b(cnt)
		blocking = func() error { return w.ReduceScatterBlock(send, recv, typ, affine) }
		start = func() (*comm.Request, error) { return w.IreduceScatterBlock(send, recv, typ, affine) }
	case "scan", "exscan":
		send, recv := in(cnt), b(cnt)
		blocking = func() error { return w.Scan(send, recv, typ, affine) }
		start = func() (*comm.Request, error) { return w.Iscan(send, recv, typ, affine) }
		if name == "exscan" {
			blocking = func() error { return w.Exscan(send, recv, typ, affine) }
			start = func() (*comm.Request, error) { return w.Iexscan(send, recv, typ, affine) }
		}
	default:
		return fmt.Errorf("no collective %q", name)
	}
	switch form {
	case "blocking":
		return blocking()
	case "non-blocking":
		r, err := start()
		if err != nil {
			return err
		}
		_, err = r.Wait()
		return err
	}
	r, err := plan()
	if err != nil {
		return err
	}
	defer r.Free() //nolint:errcheck // inactive once waited for
	if err := r.Start(); err != nil {
		return err
	}
	_, err = r.Wait()
	return err
}
