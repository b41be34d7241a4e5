package main

import (
	"fmt"
	"strings"
)

// A benchmark is one ported definition: what it runs on each rank (its
// kernel), how many iterations each size gets, which figures it reports and
// which baselines it is judged against.
type benchmark struct {
	name   string // subcommand
	origin string // the benchmark it ports, as its authors name it
	def    string // the definition, one line, for the table's header
	class  class
	policy policy
	// minSize is the default smallest message (OSU 7.x starts latency
	// tests at 0 bytes, bandwidth and collectives at 1, float reductions at
	// one float).
	minSize int
	// floats is true for the reductions, which move float32 elements
	// (MPI_FLOAT); their sizes are in bytes, a multiple of 4.
	floats bool
	// sized is false for benchmarks without a message (barrier): they
	// measure one row, size 0.
	sized bool
	// figures are the metrics the kernel fills in (on rank 0).
	figures []metric
	// chanBase and copyBase say which baselines its rows carry: the raw
	// channel ping-pong beside latency, copy() beside bandwidth (and beside
	// latency as the time of one copy).
	chanBase, copyBase bool
	// ranks is the number of ranks it runs on, given -np.
	ranks func(np int) int
	// buffers returns the bytes of send and receive buffer one rank needs
	// for messages of size bytes on n ranks.
	buffers func(size, n int) (send, recv int)
	kernel  kernel
}

// class groups benchmarks by the kind of table they print.
type class int

const (
	pointToPoint class = iota
	collective
)

// policy is how many iterations a size gets: the originals' loop counts.
type policy int

const (
	// latencyLoops is OSU's LAT_LOOP_*: 10,000 iterations after 100
	// warm-up up to 8 KiB (LARGE_MESSAGE_SIZE), 1,000 after 10 above.
	latencyLoops policy = iota
	// bandwidthLoops is OSU's BW_LOOP_*: 100 windows after 10 warm-up up to
	// 8 KiB, 20 after 2 above.
	bandwidthLoops
	// collectiveLoops is OSU's COLL_LOOP_*: 1,000 after 100 warm-up up to
	// 8 KiB, 100 after 10 above.
	collectiveLoops
	// imbLoops is IMB-MPI1's repetition count: MSGSPERSAMPLE (1,000) for 0
	// bytes, else min(MSGSPERSAMPLE, max(1, OVERALL_VOL/size)) with
	// OVERALL_VOL 40 MiB, after N_WARMUP (2) untimed repetitions.
	imbLoops
)

// largeMessageSize is OSU's LARGE_MESSAGE_SIZE: sizes above it get the
// large-message iteration counts.
const largeMessageSize = 8192

// IMB-MPI1 settings (IMB_settings.h).
const (
	imbMsgsPerSample = 1000
	imbOverallVol    = 40 << 20
	imbWarmup        = 2
	imbBarriers      = 2 // N_BARR: barriers before each timed sample
)

// defaultWindow is OSU's window of non-blocking operations in flight for
// osu_bw, osu_bibw and osu_mbw_mr.
const defaultWindow = 64

// iterPlan is what one message size gets: Iters timed iterations after
// Skip untimed warm-up ones.
type iterPlan struct {
	Size, Iters, Skip int
}

// plan returns the originals' iteration counts for size.
func (p policy) plan(size int) iterPlan {
	small := size <= largeMessageSize
	switch p {
	case latencyLoops:
		if small {
			return iterPlan{size, 10000, 100}
		}
		return iterPlan{size, 1000, 10}
	case bandwidthLoops:
		if small {
			return iterPlan{size, 100, 10}
		}
		return iterPlan{size, 20, 2}
	case collectiveLoops:
		if small {
			return iterPlan{size, 1000, 100}
		}
		return iterPlan{size, 100, 10}
	case imbLoops:
		n := imbMsgsPerSample
		if size > 0 {
			n = min(imbMsgsPerSample, max(1, imbOverallVol/size))
		}
		return iterPlan{size, n, imbWarmup}
	}
	panic(fmt.Sprintf("mpbench: unknown iteration policy %d", p))
}

// sizes returns the message sizes from lo to hi as OSU steps through them:
// doubling, with 0 followed by 1.
func sizes(lo, hi int) []int {
	var s []int
	for n := lo; n <= hi; {
		s = append(s, n)
		if n == 0 {
			n = 1
		} else {
			n *= 2
		}
	}
	return s
}

// plans returns the iteration plan of every size the benchmark runs under
// o: the original's counts unless -iters or -skip override them.
func (b *benchmark) plans(o *options) []iterPlan {
	if !b.sized {
		return []iterPlan{b.override(b.policy.plan(0), o)}
	}
	lo := b.minSize
	if o.minSet {
		lo = o.min
	}
	var ps []iterPlan
	for _, s := range sizes(lo, o.max) {
		if b.floats {
			if s < 4 { // OSU 7.x skips sizes below one float
				continue
			}
			s -= s % 4
		}
		ps = append(ps, b.override(b.policy.plan(s), o))
	}
	return ps
}

func (b *benchmark) override(p iterPlan, o *options) iterPlan {
	if o.iters > 0 {
		p.Iters = o.iters
	}
	if o.skip >= 0 {
		p.Skip = o.skip
	}
	return p
}

// has reports whether the benchmark reports metric m.
func (b *benchmark) has(m metric) bool {
	for _, f := range b.figures {
		if f == m {
			return true
		}
	}
	return false
}

// Rank counts.
func two(int) int { return 2 }
func all(np int) int {
	return max(np, 2)
}
func pairs(np int) int { // an even number of ranks, at least 2
	return max(np&^1, 2)
}

// Buffer shapes.
func oneEach(size, _ int) (int, int)    { return size, size }
func ackOnly(size, _ int) (int, int)    { return max(size, 4), max(size, 4) }
func perRank(size, n int) (int, int)    { return size, n * size }
func allPerRank(size, n int) (int, int) { return n * size, n * size }
func exchangeBufs(size, _ int) (int, int) {
	return size, 2 * size
}

// benchmarks is every benchmark, in the order `all` runs them.
var benchmarks = []*benchmark{
	{name: "latency", origin: "osu_latency", class: pointToPoint, policy: latencyLoops, sized: true,
		def:     "blocking Send/Recv ping-pong between 2 ranks; latency = half the round trip",
		figures: []metric{mLat}, chanBase: true, copyBase: true, ranks: two, buffers: oneEach, kernel: osuLatency},
	{name: "bw", origin: "osu_bw", class: pointToPoint, policy: bandwidthLoops, minSize: 1, sized: true,
		def:     "window of Isends against pre-posted Irecvs, Waitall, 4-byte ack; MB/s = size*window*iters/time",
		figures: []metric{mBW}, copyBase: true, ranks: two, buffers: ackOnly, kernel: osuBW},
	{name: "bibw", origin: "osu_bibw", class: pointToPoint, policy: bandwidthLoops, minSize: 1, sized: true,
		def:     "both ranks post a window of Irecvs and Isends, Waitall; MB/s = 2*size*window*iters/time",
		figures: []metric{mBW}, copyBase: true, ranks: two, buffers: oneEach, kernel: osuBiBW},
	{name: "mbw_mr", origin: "osu_mbw_mr", class: pointToPoint, policy: bandwidthLoops, minSize: 1, sized: true,
		def:     "rank i sends windows to rank i+n/2 (osu_bw per pair); aggregate MB/s and messages/s over the pairs",
		figures: []metric{mBW, mRate}, copyBase: true, ranks: pairs, buffers: ackOnly, kernel: osuMbwMr},
	{name: "multi_lat", origin: "osu_multi_lat", class: pointToPoint, policy: latencyLoops, sized: true,
		def:     "rank i ping-pongs with rank i+n/2, all pairs at once; latency averaged over the ranks",
		figures: []metric{mLat}, chanBase: true, copyBase: true, ranks: pairs, buffers: oneEach, kernel: osuMultiLat},
	{name: "bcast", origin: "osu_bcast", class: collective, policy: collectiveLoops, minSize: 1, sized: true,
		def:     "Bcast from rank 0, timed per call, barrier between calls; average over iterations, then min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: oneEach, kernel: osuBcast},
	{name: "bcast_persistent", origin: "osu_bcast_persistent", class: collective, policy: collectiveLoops, minSize: 1, sized: true,
		def:     "Bcast from rank 0 planned once per size (BcastInit), each call Start and Wait, timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: oneEach, kernel: osuBcastPersistent},
	{name: "reduce", origin: "osu_reduce", class: collective, policy: collectiveLoops, minSize: 4, sized: true, floats: true,
		def:     "Reduce (float32 sum) to rank 0, timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: oneEach, kernel: osuReduce},
	{name: "reduce_persistent", origin: "osu_reduce_persistent", class: collective, policy: collectiveLoops, minSize: 4, sized: true, floats: true,
		def:     "Reduce (float32 sum) to rank 0 planned once per size (ReduceInit), each call Start and Wait, timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: oneEach, kernel: osuReducePersistent},
	{name: "allreduce", origin: "osu_allreduce", class: collective, policy: collectiveLoops, minSize: 4, sized: true, floats: true,
		def:     "Allreduce (float32 sum), timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: oneEach, kernel: osuAllreduce},
	{name: "allreduce_persistent", origin: "osu_allreduce_persistent", class: collective, policy: collectiveLoops, minSize: 4, sized: true, floats: true,
		def:     "Allreduce (float32 sum) planned once per size (AllreduceInit), each call Start and Wait, timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: oneEach, kernel: osuAllreducePersistent},
	{name: "allgather", origin: "osu_allgather", class: collective, policy: collectiveLoops, minSize: 1, sized: true,
		def:     "Allgather of size bytes per rank, timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: perRank, kernel: osuAllgather},
	{name: "allgather_persistent", origin: "osu_allgather_persistent", class: collective, policy: collectiveLoops, minSize: 1, sized: true,
		def:     "Allgather of size bytes per rank planned once per size (AllgatherInit), each call Start and Wait, timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: perRank, kernel: osuAllgatherPersistent},
	{name: "alltoall", origin: "osu_alltoall", class: collective, policy: collectiveLoops, minSize: 1, sized: true,
		def:     "Alltoall of size bytes per pair, timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: allPerRank, kernel: osuAlltoall},
	{name: "alltoall_persistent", origin: "osu_alltoall_persistent", class: collective, policy: collectiveLoops, minSize: 1, sized: true,
		def:     "Alltoall of size bytes per pair planned once per size (AlltoallInit), each call Start and Wait, timed per call, barrier between calls; min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: allPerRank, kernel: osuAlltoallPersistent},
	{name: "barrier", origin: "osu_barrier", class: collective, policy: collectiveLoops, sized: false,
		def:     "Barrier, timed per call; average over iterations, then min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: oneEach, kernel: osuBarrier},
	{name: "barrier_persistent", origin: "osu_barrier_persistent", class: collective, policy: collectiveLoops, sized: false,
		def:     "Barrier planned once (BarrierInit), each call Start and Wait, timed per call; average over iterations, then min/avg/max over ranks",
		figures: []metric{mLat, mMin, mMax}, ranks: all, buffers: oneEach, kernel: osuBarrierPersistent},
	{name: "pingpong", origin: "IMB-MPI1 PingPong", class: pointToPoint, policy: imbLoops, sized: true,
		def:     "Send/Recv ping-pong between 2 ranks; t = Δt/2 per repetition, MB/s = size/t",
		figures: []metric{mLat, mBW}, chanBase: true, copyBase: true, ranks: two, buffers: oneEach, kernel: imbPingPong},
	{name: "pingping", origin: "IMB-MPI1 PingPing", class: pointToPoint, policy: imbLoops, sized: true,
		def:     "both ranks Isend, Recv, Wait at once; t = Δt per repetition (max over ranks), MB/s = size/t",
		figures: []metric{mLat, mBW}, chanBase: true, copyBase: true, ranks: two, buffers: oneEach, kernel: imbPingPing},
	{name: "sendrecv", origin: "IMB-MPI1 Sendrecv", class: pointToPoint, policy: imbLoops, sized: true,
		def:     "periodic chain: Sendrecv to the right, from the left; t = Δt (avg, min, max over ranks), MB/s = 2*size/t_max",
		figures: []metric{mLat, mMin, mMax, mBW}, chanBase: true, copyBase: true, ranks: all, buffers: oneEach, kernel: imbSendrecv},
	{name: "exchange", origin: "IMB-MPI1 Exchange", class: pointToPoint, policy: imbLoops, sized: true,
		def:     "Isend left and right, Recv from both, Waitall; t = Δt (avg, min, max over ranks), MB/s = 4*size/t_max",
		figures: []metric{mLat, mMin, mMax, mBW}, chanBase: true, copyBase: true, ranks: all, buffers: exchangeBufs, kernel: imbExchange},
}

// lookup returns the benchmarks named by args ("all" for every one).
func lookup(args []string) ([]*benchmark, error) {
	var out []*benchmark
	for _, a := range args {
		if a == "all" {
			out = append(out, benchmarks...)
			continue
		}
		b := find(a)
		if b == nil {
			return nil, fmt.Errorf("mpbench: unknown benchmark %q (want one of %s, all)", a, strings.Join(names(), ", "))
		}
		out = append(out, b)
	}
	return out, nil
}

func find(name string) *benchmark {
	for _, b := range benchmarks {
		if b.name == name {
			return b
		}
	}
	return nil
}

func names() []string {
	var n []string
	for _, b := range benchmarks {
		n = append(n, b.name)
	}
	return n
}
