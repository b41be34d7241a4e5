package main

import (
	"time"

	"github.com/mpgo/mpgo/comm"
)

// The IMB-MPI1 single-transfer and parallel-transfer benchmarks (PingPong,
// PingPing, Sendrecv, Exchange): N_BARR barriers, then n_sample
// repetitions timed as one block (after N_WARMUP untimed ones); t is the
// block's time over n_sample. Throughput is in MB/s of 10^6 bytes.

// imbTimed runs the warm-up, the barriers and the timed repetitions of op,
// and returns t, the time of one repetition in µs, on this rank.
func imbTimed(e *env, p iterPlan, op func() error) (float64, error) {
	for i := 0; i < p.Skip; i++ {
		if err := op(); err != nil {
			return 0, err
		}
	}
	for i := 0; i < imbBarriers; i++ {
		if err := e.w.Barrier(); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	for i := 0; i < p.Iters; i++ {
		if err := op(); err != nil {
			return 0, err
		}
	}
	return us(time.Since(t0)) / float64(p.Iters), nil
}

// imbPingPong is PingPong: rank 0 sends and receives, rank 1 receives and
// sends back; t = Δt/2, throughput size/t.
func imbPingPong(e *env, p iterPlan) (sample, error) {
	c, s, r := e.bytes, e.sbuf[:p.Size], e.rbuf[:p.Size]
	rank := e.w.Rank()
	op := func() error {
		if rank == 0 {
			if err := c.Send(s, 1, tagData); err != nil {
				return err
			}
			_, err := c.Recv(r, 1, tagData)
			return err
		}
		if _, err := c.Recv(r, 0, tagData); err != nil {
			return err
		}
		return c.Send(s, 0, tagData)
	}
	t, err := imbTimed(e, p, op)
	if err != nil || rank != 0 {
		return sample{}, err
	}
	t /= 2
	return sample{mLat: t, mBW: bandwidth(p.Size, t)}, nil
}

// imbPingPing is PingPing: both ranks Isend to the other, Recv from it and
// Wait for the send, at once; t is the larger of the two ranks' Δt,
// throughput size/t.
func imbPingPing(e *env, p iterPlan) (sample, error) {
	c, s, r := e.bytes, e.sbuf[:p.Size], e.rbuf[:p.Size]
	peer := 1 - e.w.Rank()
	op := func() error {
		req, err := c.Isend(s, peer, tagData)
		if err != nil {
			return err
		}
		if _, err := c.Recv(r, peer, tagData); err != nil {
			return err
		}
		_, err = req.Wait()
		return err
	}
	t, err := imbTimed(e, p, op)
	if err != nil {
		return sample{}, err
	}
	_, _, hi, _, err := e.overRanks(t)
	if err != nil {
		return sample{}, err
	}
	return sample{mLat: hi, mBW: bandwidth(p.Size, hi)}, nil
}

// imbSendrecv is Sendrecv: the ranks form a periodic chain, each sending to
// its right and receiving from its left in one Sendrecv; t over the ranks
// (avg, min, max), throughput 2·size/t_max.
func imbSendrecv(e *env, p iterPlan) (sample, error) {
	c, s, r := e.bytes, e.sbuf[:p.Size], e.rbuf[:p.Size]
	n, rank := e.w.Size(), e.w.Rank()
	right, left := (rank+1)%n, (rank-1+n)%n
	op := func() error {
		_, err := c.Sendrecv(s, right, tagData, r, left, tagData)
		return err
	}
	return imbOverRanks(e, p, op, 2)
}

// imbExchange is Exchange: each rank Isends to its left and its right
// neighbour, Recvs from both and waits for its sends; t over the ranks
// (avg, min, max), throughput 4·size/t_max.
func imbExchange(e *env, p iterPlan) (sample, error) {
	c, s := e.bytes, e.sbuf[:p.Size]
	fromLeft, fromRight := e.rbuf[:p.Size], e.rbuf[p.Size:2*p.Size]
	n, rank := e.w.Size(), e.w.Rank()
	right, left := (rank+1)%n, (rank-1+n)%n
	reqs := e.reqs[:2]
	op := func() error {
		var err error
		if reqs[0], err = c.Isend(s, right, tagRight); err != nil {
			return err
		}
		if reqs[1], err = c.Isend(s, left, tagLeft); err != nil {
			return err
		}
		if _, err := c.Recv(fromLeft, left, tagRight); err != nil {
			return err
		}
		if _, err := c.Recv(fromRight, right, tagLeft); err != nil {
			return err
		}
		return comm.WaitAll(reqs...)
	}
	return imbOverRanks(e, p, op, 4)
}

// imbOverRanks times op and reduces t over the ranks: t_avg, t_min, t_max,
// and the throughput of factor·size bytes in t_max.
func imbOverRanks(e *env, p iterPlan, op func() error, factor int) (sample, error) {
	t, err := imbTimed(e, p, op)
	if err != nil {
		return sample{}, err
	}
	lo, avg, hi, _, err := e.overRanks(t)
	if err != nil {
		return sample{}, err
	}
	return sample{mLat: avg, mMin: lo, mMax: hi, mBW: bandwidth(factor*p.Size, hi)}, nil
}

// bandwidth is bytes moved in t µs, in MB/s: bytes per µs.
func bandwidth(bytes int, t float64) float64 {
	if t <= 0 {
		return 0
	}
	return float64(bytes) / t
}
