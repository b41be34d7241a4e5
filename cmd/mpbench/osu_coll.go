package main

import (
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// The collective benchmarks of the OSU Micro-Benchmarks 7.x (osu_bcast,
// osu_reduce, osu_allreduce, osu_allgather, osu_alltoall, osu_barrier):
// every call is timed on its own, a barrier separates the calls (but not
// in osu_barrier), each rank averages its timed calls, and the ranks'
// averages are reduced to their minimum, mean and maximum.

// timeCalls runs op p.Skip+p.Iters times as OSU's collective loop does and
// returns the rank 0 figures: the mean over ranks of each rank's mean
// time, and the smallest and largest rank means.
func timeCalls(e *env, p iterPlan, barrierBetween bool, op func() error) (sample, error) {
	var timer time.Duration
	for i := 0; i < p.Iters+p.Skip; i++ {
		t0 := time.Now()
		if err := op(); err != nil {
			return sample{}, err
		}
		if d := time.Since(t0); i >= p.Skip {
			timer += d
		}
		if barrierBetween {
			if err := e.w.Barrier(); err != nil {
				return sample{}, err
			}
		}
	}
	lo, avg, hi, _, err := e.overRanks(us(timer) / float64(p.Iters))
	if err != nil {
		return sample{}, err
	}
	return sample{mLat: avg, mMin: lo, mMax: hi}, nil
}

func osuBcast(e *env, p iterPlan) (sample, error) {
	buf := e.sbuf[:p.Size]
	return timeCalls(e, p, true, func() error { return e.bytes.Bcast(buf, 0) })
}

func osuReduce(e *env, p iterPlan) (sample, error) {
	n := p.Size / 4
	s, r := e.fsend[:n], e.frecv[:n]
	return timeCalls(e, p, true, func() error { return e.floats.Reduce(s, r, typed.Sum[float32], 0) })
}

func osuAllreduce(e *env, p iterPlan) (sample, error) {
	n := p.Size / 4
	s, r := e.fsend[:n], e.frecv[:n]
	return timeCalls(e, p, true, func() error { return e.floats.Allreduce(s, r, typed.Sum[float32]) })
}

// osuAllreducePersistent is osu_allreduce_persistent (OSU 7.4): an
// Allreduce planned once per size (MPI_Allreduce_init), each call a
// start and its Wait, timed as osu_allreduce times the blocking call.
func osuAllreducePersistent(e *env, p iterPlan) (sample, error) {
	n := p.Size / 4
	r, err := e.floats.AllreduceInit(e.fsend[:n], e.frecv[:n], typed.Sum[float32])
	return timeStarts(e, p, true, r, err)
}

// osuBcastPersistent is osu_bcast_persistent (OSU 7.4): a Bcast from
// rank 0 planned once per size (MPI_Bcast_init).
func osuBcastPersistent(e *env, p iterPlan) (sample, error) {
	r, err := e.w.BcastInit(e.sbuf[:p.Size], comm.Byte, 0)
	return timeStarts(e, p, true, r, err)
}

// osuReducePersistent is osu_reduce_persistent (OSU 7.4): a Reduce
// (float32 sum) to rank 0 planned once per size (MPI_Reduce_init).
func osuReducePersistent(e *env, p iterPlan) (sample, error) {
	n := p.Size / 4
	r, err := e.floats.ReduceInit(e.fsend[:n], e.frecv[:n], typed.Sum[float32], 0)
	return timeStarts(e, p, true, r, err)
}

// osuBarrierPersistent is osu_barrier_persistent (OSU 7.4): a Barrier
// planned once (MPI_Barrier_init).
func osuBarrierPersistent(e *env, p iterPlan) (sample, error) {
	r, err := e.w.BarrierInit()
	return timeStarts(e, p, false, r, err)
}

// timeStarts times the starts of persistent collective r (planned with
// error err), each waited for at once, as timeCalls times a blocking
// call, and frees r.
func timeStarts(e *env, p iterPlan, barrierBetween bool, r *comm.Request, err error) (sample, error) {
	if err != nil {
		return sample{}, err
	}
	defer r.Free()
	return timeCalls(e, p, barrierBetween, func() error {
		if err := r.Start(); err != nil {
			return err
		}
		_, err := r.Wait()
		return err
	})
}

func osuAllgather(e *env, p iterPlan) (sample, error) {
	s, r := e.sbuf[:p.Size], e.rbuf[:p.Size*e.w.Size()]
	return timeCalls(e, p, true, func() error { return e.bytes.Allgather(s, r) })
}

func osuAlltoall(e *env, p iterPlan) (sample, error) {
	n := p.Size * e.w.Size()
	s, r := e.sbuf[:n], e.rbuf[:n]
	return timeCalls(e, p, true, func() error { return e.bytes.Alltoall(s, r) })
}

// osuAllgatherPersistent is osu_allgather_persistent (OSU 7.4): an
// Allgather planned once per size (MPI_Allgather_init).
func osuAllgatherPersistent(e *env, p iterPlan) (sample, error) {
	r, err := e.bytes.AllgatherInit(e.sbuf[:p.Size], e.rbuf[:p.Size*e.w.Size()])
	return timeStarts(e, p, true, r, err)
}

// osuAlltoallPersistent is osu_alltoall_persistent (OSU 7.4): an
// Alltoall planned once per size (MPI_Alltoall_init).
func osuAlltoallPersistent(e *env, p iterPlan) (sample, error) {
	n := p.Size * e.w.Size()
	r, err := e.bytes.AlltoallInit(e.sbuf[:n], e.rbuf[:n])
	return timeStarts(e, p, true, r, err)
}

func osuBarrier(e *env, p iterPlan) (sample, error) {
	return timeCalls(e, p, false, e.w.Barrier)
}
