package coll

// The choice of algorithm: one table, every threshold. MPICH's choices
// for the point-to-point algorithms (by message size and rank count); the
// shared-memory family wherever every member runs in this process (it
// wakes each rank once per gate instead of once per message, so it wins at
// every size when ranks are goroutines, and choosing it whatever the size
// keeps ranks that disagree on a count within one family, where the
// mismatch is reported); the two-level algorithms where the members run in
// several processes, several in some.

// Form is the variant of a collective a choice is for.
type Form uint8

const (
	// Plain: the collective itself (Bcast, Gather, Allgather, …, Exscan).
	Plain Form = iota
	// Vector: the v-variants (Gatherv, Scatterv, Allgatherv, Alltoallv).
	Vector
	// Value: BcastValue and GatherValue (gob encodings).
	Value
	// NonBlocking: Ibarrier, Ibcast, Iallreduce, which run only
	// point-to-point algorithms.
	NonBlocking
	numForms
)

// Placement says where a communicator's members run.
type Placement uint8

const (
	// Remote: not all in this process, and no two-level shape.
	Remote Placement = iota
	// Local: every member in this process; the shared-memory algorithms
	// may read their buffers.
	Local
	// Hybrid: several processes, several members in some, each process's
	// members a range of ranks: the two-level algorithms apply.
	Hybrid
)

// Choice is what the choice of algorithm depends on.
type Choice struct {
	Coll   Collective
	Form   Form
	Bytes  int // the size the rules read: see table
	Ranks  int // ≥ 2 (a single rank runs no algorithm)
	Where  Placement
	Pinned Algorithm // set by comm.SetAlgorithm; Auto when none
}

// The thresholds, in bytes.
const (
	bcastLong          = 12 << 10 // from here, with many ranks, van de Geijn's broadcast
	bcastManyRanks     = 8
	reduceShort        = 2 << 10 // up to here, trees and recursive doubling
	reduceSegmentMin   = 64      // below 64 bytes per power-of-two rank, likewise
	rootedShort        = 2 << 10 // below this block, binomial gather and scatter
	allgatherShort     = 80 << 10
	alltoallShortBlock = 256
	alltoallManyRanks  = 8

	// StageLimit is the largest input a shared-memory collective copies to
	// its staging buffer, to end the call at its first gate; a broadcast,
	// whose root alone copies, stages up to BcastStageLimit. Staging is
	// dearer than its one copy suggests: the staging buffer's lines were
	// read by the other ranks in an earlier call, so each line the copy
	// writes must first be taken back from their caches (on the 2-core
	// dev VM, 64 KiB written over lines another core had read took 7.3 µs,
	// against 1.6 µs to read them). Above these limits the inputs are read
	// where they lie, behind a second gate: at 2 ranks a Bcast of 64 KiB
	// took 2.0–2.7 µs so against 7–30 µs staged, an Allgather of 8 KiB
	// 0.8–1.1 against 1.8–2.5 (typed benchmarks, alternated).
	//
	// Where the world's ranks outnumber its Ps (crowded), a broadcast
	// stages up to CrowdedBcastStageLimit instead (StagedCrowded): there
	// the second gate costs every member a switch of goroutines, more than
	// the root's copy, after which the root leaves (8 ranks on 2 cores, 8
	// KiB: 3.4 µs staged against 3.9 direct; 64 ranks, 64 KiB: 90 against
	// 110 µs). The other collectives' limits stay: their direct variants
	// were as fast or faster there too.
	StageLimit             = 2 << 10
	BcastStageLimit        = 4 << 10
	CrowdedBcastStageLimit = 64 << 10
	// ReplicateLimit bounds the bytes (input × ranks) a rank reduces on its
	// own in a shared-memory reduction's replicated variant: beyond, the
	// second gate of the direct variant costs less than the redundant work
	// and the staging (at 8 ranks on 2 cores, an Allreduce of 2 KiB took
	// 5.4–6.0 µs direct against 8.6–9.9 replicated).
	ReplicateLimit = 4 << 10
	// CombineLimit is the longest input of a shared-memory reduction that
	// may be combined (see Combined): one row of the table, a cache line.
	CombineLimit = 64
)

// row is one line of the table: alg when fits (nil: always).
type row struct {
	fits func(bytes, ranks int) bool
	alg  Algorithm
}

func always(bytes, ranks int) bool { return true }

// shortReduction: trees and recursive doubling, which move whole vectors,
// for short ones and for those too short to cut in a segment per rank.
func shortReduction(n, ranks int) bool {
	return n <= reduceShort || n < reduceSegmentMin*HighBit(ranks)
}

// table lists, per collective and form, the point-to-point choices in
// order (the first that fits wins; the last always fits), by Bytes:
//
//   - Bcast: the buffer;
//   - Reduce, Allreduce, Scan, ReduceScatter: the send buffer;
//   - Gather: the block each rank sends; Scatter: the block each receives;
//   - Allgather: the block each rank sends;
//   - Alltoall: the block each rank sends to rank 0.
//
// NonBlocking forms read the Plain rows. A Vector or Value form runs only
// the algorithms of its rows: pinned to another, it runs its last row's.
var table = [NumColls][numForms][]row{
	Barrier: {Plain: {{always, Dissemination}}},
	Bcast: {
		Plain: {
			{func(n, ranks int) bool { return n < bcastLong || ranks < bcastManyRanks }, Binomial},
			{always, ScatterAllgather},
		},
		Value: {{always, Binomial}},
	},
	Reduce:    {Plain: {{shortReduction, Binomial}, {always, Rabenseifner}}},
	Allreduce: {Plain: {{shortReduction, RecursiveDoubling}, {always, Rabenseifner}}},
	Gather: {
		Plain:  {{func(k, _ int) bool { return k < rootedShort }, Binomial}, {always, Flat}},
		Vector: {{always, Flat}},
		Value:  {{always, Flat}},
	},
	Scatter: {
		Plain:  {{func(k, _ int) bool { return k < rootedShort }, Binomial}, {always, Flat}},
		Vector: {{always, Flat}},
	},
	Allgather: {
		Plain:  {{func(k, ranks int) bool { return k*ranks < allgatherShort }, Bruck}, {always, Ring}},
		Vector: {{always, Ring}},
	},
	Alltoall: {
		Plain:  {{func(k, ranks int) bool { return k <= alltoallShortBlock && ranks >= alltoallManyRanks }, Bruck}, {always, Pairwise}},
		Vector: {{always, Pairwise}},
	},
	ReduceScatter: {Plain: {{always, RecursiveHalving}}},
	Scan:          {Plain: {{always, RecursiveDoubling}}},
}

// twoLevel lists the collectives with a two-level algorithm.
var twoLevel = [NumColls]bool{Barrier: true, Bcast: true, Allreduce: true}

// Select returns the algorithm that c runs: the pinned one (a
// non-blocking collective ignores a pinned shared-memory or two-level
// one), else shared memory where the members share it, else the two-level
// algorithm where the collective has one and the members are so placed,
// else the table's choice.
func Select(c Choice) Algorithm {
	alg := c.Pinned
	form := c.Form
	if form == NonBlocking {
		form = Plain
		if alg == SharedMemory || alg == Hierarchical {
			alg = Auto
		}
	} else if alg == Auto {
		switch {
		case c.Where == Local:
			return SharedMemory
		case c.Where == Hybrid && twoLevel[c.Coll]:
			alg = Hierarchical
		}
	}
	rows := table[c.Coll][form]
	if alg == Auto {
		for _, r := range rows {
			if r.fits(c.Bytes, c.Ranks) {
				return r.alg
			}
		}
	}
	if form == Plain || alg == SharedMemory {
		return alg
	}
	for _, r := range rows {
		if r.alg == alg {
			return alg
		}
	}
	return rows[len(rows)-1].alg
}

// Staged reports whether a shared-memory collective on ranks members
// copies its input of n bytes to staging (or, for the reductions, reduces
// it whole on every rank that needs the result: replicated) rather than
// letting the others read it in place, which costs a second gate. n is
// the root's buffer for Bcast and Scatter, and each rank's send buffer
// otherwise.
func Staged(c Collective, n, ranks int) bool {
	switch c {
	case Bcast:
		return n <= BcastStageLimit
	case Reduce, Allreduce, Scan:
		return n <= StageLimit && n*ranks <= ReplicateLimit
	}
	return n <= StageLimit
}

// StagedCrowded is Staged in a world whose ranks outnumber its Ps: only a
// broadcast's limit differs (CrowdedBcastStageLimit).
func StagedCrowded(c Collective, n, ranks int) bool {
	if c == Bcast {
		return n <= CrowdedBcastStageLimit
	}
	return Staged(c, n, ranks)
}

// Combined reports whether a shared-memory Reduce or Allreduce of n bytes
// a rank on ranks members is combined: each member copies its input to
// its row of a table the members share, and the last to arrive at the
// gate reduces the rows, in rank order, to one result that the members
// read once through it. It serves the calls that Staged does not
// replicate (too many ranks) and whose vectors are too short to be worth
// the direct variant's second gate: one rank's pass over n×ranks bytes
// laid out in order costs less than parking and waking every rank once
// more (on 100,000 ranks, about 1 ms against 50-100).
func Combined(c Collective, n, ranks int) bool {
	return (c == Reduce || c == Allreduce) && n <= CombineLimit && n*ranks > ReplicateLimit
}
