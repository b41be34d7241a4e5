package main

import (
	"time"

	"github.com/mpgo/mpgo/comm"
)

// The point-to-point benchmarks of the OSU Micro-Benchmarks 7.x, ported
// loop for loop: the same messages, tags, buffers and timed region. One
// send buffer and one receive buffer serve every message, as in OSU.

// osuLatency is osu_latency: rank 0 sends and then receives, rank 1
// receives and then sends back; the latency is half the round trip,
// averaged over the timed iterations.
func osuLatency(e *env, p iterPlan) (sample, error) {
	c, s, r := e.bytes, e.sbuf[:p.Size], e.rbuf[:p.Size]
	var t0 time.Time
	switch e.w.Rank() {
	case 0:
		for i := 0; i < p.Iters+p.Skip; i++ {
			if i == p.Skip {
				t0 = time.Now()
			}
			if err := c.Send(s, 1, tagData); err != nil {
				return sample{}, err
			}
			if _, err := c.Recv(r, 1, tagData); err != nil {
				return sample{}, err
			}
		}
		return sample{mLat: us(time.Since(t0)) / (2 * float64(p.Iters))}, nil
	case 1:
		for i := 0; i < p.Iters+p.Skip; i++ {
			if _, err := c.Recv(r, 0, tagData); err != nil {
				return sample{}, err
			}
			if err := c.Send(s, 0, tagData); err != nil {
				return sample{}, err
			}
		}
	}
	return sample{}, nil
}

// osuBW is osu_bw: rank 0 starts a window of Isends, waits for them all and
// for rank 1's 4-byte ack; rank 1 pre-posts the window's Irecvs, waits for
// them and sends the ack. Bandwidth is size × window × iterations over the
// time, in MB/s (10^6 bytes).
func osuBW(e *env, p iterPlan) (sample, error) {
	switch e.w.Rank() {
	case 0:
		t, err := bwSender(e, p, 1, nil)
		if err != nil {
			return sample{}, err
		}
		return sample{mBW: float64(p.Size) / 1e6 * float64(p.Iters) * float64(e.window) / t.Seconds()}, nil
	case 1:
		return sample{}, bwReceiver(e, p, 0, nil)
	}
	return sample{}, nil
}

// bwSender is the sending side of osu_bw and osu_mbw_mr: the windows to
// peer and their acks; it returns the time of the timed iterations. sync,
// when not nil, is called at the first timed iteration (mbw_mr's barrier).
func bwSender(e *env, p iterPlan, peer int, sync func() error) (time.Duration, error) {
	c, s, ack := e.bytes, e.sbuf[:p.Size], e.rbuf[:4]
	reqs := e.reqs[:e.window]
	var t0 time.Time
	for i := 0; i < p.Iters+p.Skip; i++ {
		if i == p.Skip {
			if sync != nil {
				if err := sync(); err != nil {
					return 0, err
				}
			}
			t0 = time.Now()
		}
		var err error
		for j := range reqs {
			if reqs[j], err = c.Isend(s, peer, tagBW); err != nil {
				return 0, err
			}
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return 0, err
		}
		if _, err := c.Recv(ack, peer, tagAck); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// bwReceiver is the receiving side of osu_bw and osu_mbw_mr; sync as for
// bwSender.
func bwReceiver(e *env, p iterPlan, peer int, sync func() error) error {
	c, r, ack := e.bytes, e.rbuf[:p.Size], e.sbuf[:4]
	reqs := e.reqs[:e.window]
	for i := 0; i < p.Iters+p.Skip; i++ {
		if i == p.Skip && sync != nil {
			if err := sync(); err != nil {
				return err
			}
		}
		var err error
		for j := range reqs {
			if reqs[j], err = c.Irecv(r, peer, tagBW); err != nil {
				return err
			}
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		if err := c.Send(ack, peer, tagAck); err != nil {
			return err
		}
	}
	return nil
}

// osuBiBW is osu_bibw: both ranks pre-post a window of Irecvs, start a
// window of Isends, and wait for the sends and then the receives. Rank 0's
// time counts; bandwidth is 2 × size × window × iterations over it.
func osuBiBW(e *env, p iterPlan) (sample, error) {
	rank := e.w.Rank()
	if rank > 1 {
		return sample{}, nil
	}
	c, s, r := e.bytes, e.sbuf[:p.Size], e.rbuf[:p.Size]
	peer := 1 - rank
	recvTag, sendTag := tagBack, tagBW // rank 0 receives the way back
	if rank == 1 {
		recvTag, sendTag = tagBW, tagBack
	}
	recvs, sends := e.reqs[:e.window], e.reqs[e.window:2*e.window]
	var t0 time.Time
	for i := 0; i < p.Iters+p.Skip; i++ {
		if i == p.Skip {
			t0 = time.Now()
		}
		var err error
		for j := range recvs {
			if recvs[j], err = c.Irecv(r, peer, recvTag); err != nil {
				return sample{}, err
			}
		}
		for j := range sends {
			if sends[j], err = c.Isend(s, peer, sendTag); err != nil {
				return sample{}, err
			}
		}
		if err := comm.WaitAll(sends...); err != nil {
			return sample{}, err
		}
		if err := comm.WaitAll(recvs...); err != nil {
			return sample{}, err
		}
	}
	t := time.Since(t0)
	if rank != 0 {
		return sample{}, nil
	}
	return sample{mBW: float64(p.Size) / 1e6 * float64(p.Iters) * float64(e.window) * 2 / t.Seconds()}, nil
}

// osuMbwMr is osu_mbw_mr: with n ranks, rank i < n/2 runs osu_bw's sender
// against rank i+n/2, every pair at once, after a common barrier at the
// first timed iteration. The senders' times are summed and averaged over
// the pairs; the aggregate bandwidth is size × pairs × window × iterations
// over that average, and the message rate is bandwidth / size.
func osuMbwMr(e *env, p iterPlan) (sample, error) {
	rank, npairs := e.w.Rank(), e.w.Size()/2
	barrier := e.w.Barrier
	var t time.Duration
	switch {
	case rank < npairs:
		var err error
		if t, err = bwSender(e, p, rank+npairs, barrier); err != nil {
			return sample{}, err
		}
	case rank < 2*npairs:
		if err := bwReceiver(e, p, rank-npairs, barrier); err != nil {
			return sample{}, err
		}
	default:
		if err := barrier(); err != nil {
			return sample{}, err
		}
	}
	_, _, _, sum, err := e.overRanks(t.Seconds())
	if err != nil || rank != 0 {
		return sample{}, err
	}
	avg := sum / float64(npairs)
	bw := float64(p.Size) / 1e6 * float64(npairs) * float64(p.Iters) * float64(e.window) / avg
	s := sample{mBW: bw}
	if p.Size > 0 {
		s[mRate] = bw * 1e6 / float64(p.Size)
	}
	return s, nil
}

// osuMultiLat is osu_multi_lat: rank i < n/2 ping-pongs with rank i+n/2
// (osu_latency's loop), all pairs at once; every rank's half round trip is
// summed and averaged over the ranks.
func osuMultiLat(e *env, p iterPlan) (sample, error) {
	rank, npairs := e.w.Rank(), e.w.Size()/2
	c, s, r := e.bytes, e.sbuf[:p.Size], e.rbuf[:p.Size]
	var lat float64
	if rank < 2*npairs {
		first := rank < npairs
		peer := rank + npairs
		if !first {
			peer = rank - npairs
		}
		var t0 time.Time
		for i := 0; i < p.Iters+p.Skip; i++ {
			if i == p.Skip {
				t0 = time.Now()
			}
			if first {
				if err := c.Send(s, peer, tagData); err != nil {
					return sample{}, err
				}
			}
			if _, err := c.Recv(r, peer, tagData); err != nil {
				return sample{}, err
			}
			if !first {
				if err := c.Send(s, peer, tagData); err != nil {
					return sample{}, err
				}
			}
		}
		lat = us(time.Since(t0)) / (2 * float64(p.Iters))
	}
	_, _, _, sum, err := e.overRanks(lat)
	if err != nil || rank != 0 {
		return sample{}, err
	}
	return sample{mLat: sum / float64(2*npairs)}, nil
}
