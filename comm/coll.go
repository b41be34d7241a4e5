package comm

import (
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// Collective operations (MPI 3.1 chapter 5): Barrier, Bcast, Reduce,
// Allreduce, Gather(v), Scatter(v), Allgather(v), Alltoall(v),
// ReduceScatterBlock, Scan, Exscan, the value forms BcastValue and
// GatherValue, and the non-blocking Ibarrier, Ibcast and Iallreduce.
//
// # Contract
//
// Every member of a communicator calls its collectives in the same order,
// one at a time per rank (like Dup and Split): a collective call made while
// another of the same rank is in progress on the communicator, from
// another goroutine, fails at once with [ErrConcurrent] and leaves the call
// in progress undisturbed (see [Comm]). Buffers belong to the call until
// it returns. Arguments that are invalid on their own (a root out of
// range, an invalid Type, a nil Op) are rejected before any communication
// with an error wrapping [ErrRank] or [ErrArg]; they are expected to be the
// same on every rank. Arguments that can differ between ranks (buffer
// lengths, counts, the element type, the collective itself) are checked
// against each other: a mismatch fails with an error wrapping [ErrTruncate]
// (counts or lengths), [ErrType] (element types) or [ErrArg] (anything
// else), never with a hang or a silently wrong result. With the
// shared-memory algorithms every rank sees every rank's arguments and all
// fail alike. With the point-to-point algorithms the rank that receives
// inconsistent data fails and goes on with the algorithm, sending poison
// (a message with a poison tag) instead of data, so every rank whose result
// depends on the bad input fails too and none waits forever; a rank whose
// result is complete and correct for its own arguments (the root of a
// broadcast tree, say) may return nil. The non-blocking and persistent
// collectives, which always run point-to-point algorithms, first agree on
// the arguments the ranks must pass alike, and so fail where the
// shared-memory algorithms fail (coll_agree.go).
//
// # Reduction order
//
// Reductions combine contributions in rank order, x0 ∘ x1 ∘ … ∘ xn-1, in a
// grouping that depends on the algorithm, so an [Op] needs to be
// associative but not commutative. (Floating-point sums may differ in the
// last bits from one algorithm to another, as with any MPI.)
//
// # Algorithms
//
// Two families, chosen at run time (see [Comm.SetAlgorithm] to pin one):
//
//   - Shared memory, when every member of the communicator runs in this
//     process: the ranks publish their buffers in a table they share and
//     meet at a gate (a barrier whose waiters are woken at once); each rank
//     then reads the others' buffers directly. Small inputs are first
//     copied to a staging buffer so that one gate suffices (double
//     buffered, so the next collective may start at once); large ones are
//     read in place and a second gate ends the call. Reductions split the
//     vector into one chunk per rank: each rank reduces its chunk across
//     every rank's input and writes the result into every rank's output,
//     one pass over memory, all ranks in parallel.
//   - Point to point, on any backend: flat trees, binomial trees,
//     recursive doubling and halving, ring, Bruck, Rabenseifner's
//     reduce-scatter + allgather, van de Geijn's scatter + allgather
//     broadcast, pairwise exchange (see [Algorithm]), selected by message
//     size and rank count as MPICH does.

// Op is a byte-level reduction operator: it combines in into inout
// element by element, inout[i] = inout[i] ∘ in[i], where inout holds the
// contribution of the lower-ranked members. Package typed makes one from
// its typed operators. An Op is called with slices of equal length that
// hold whole elements and are aligned for the element type; where a long
// vector is split (among ranks, or into blocks), the pieces start at
// multiples of 64 bytes from its start, or of the least multiple of 64
// that holds whole elements of a struct type whose size does not divide
// 64, so an element is never cut. An Op must not keep the slices. It may
// be called from any goroutine of the communicator's ranks, and
// concurrently with itself on disjoint slices.
type Op func(inout, in []byte)

// Collective names a collective operation, for [Comm.SetAlgorithm].
type Collective uint8

// The collectives whose algorithm can be chosen. The v-variants follow
// their plain collective's setting (with the flat or ring algorithm where
// the plain one has no v-form), and Exscan follows Scan.
const (
	CollBarrier       = Collective(coll.Barrier)
	CollBcast         = Collective(coll.Bcast)
	CollReduce        = Collective(coll.Reduce)
	CollAllreduce     = Collective(coll.Allreduce)
	CollGather        = Collective(coll.Gather)
	CollScatter       = Collective(coll.Scatter)
	CollAllgather     = Collective(coll.Allgather)
	CollAlltoall      = Collective(coll.Alltoall)
	CollReduceScatter = Collective(coll.ReduceScatter)
	CollScan          = Collective(coll.Scan)
	numColls          = Collective(coll.NumColls)
)

func (k Collective) String() string { return coll.Collective(k).String() }

// Algorithm names a collective algorithm.
type Algorithm uint8

// The algorithms. [Algorithms] lists those of each collective.
const (
	// AlgAuto lets mpgo choose by message size, rank count and backend.
	AlgAuto = Algorithm(coll.Auto)
	// AlgSharedMemory: the ranks read and write each other's buffers
	// directly (all members in this process).
	AlgSharedMemory = Algorithm(coll.SharedMemory)
	// AlgDissemination: Hensgen, Finkel and Manber's barrier, ⌈log2 n⌉
	// rounds of messages.
	AlgDissemination = Algorithm(coll.Dissemination)
	// AlgFlat: the root exchanges a message with every other rank.
	AlgFlat = Algorithm(coll.Flat)
	// AlgBinomial: a binomial tree (MPICH's MPIR_Bcast_binomial and kin).
	AlgBinomial = Algorithm(coll.Binomial)
	// AlgRecursiveDoubling: log2 n exchanges with partners at doubling
	// distances (allreduce, scan), with the non-power-of-two fold of
	// Thakur, Rabenseifner and Gropp (2005).
	AlgRecursiveDoubling = Algorithm(coll.RecursiveDoubling)
	// AlgRecursiveHalving: reduce-scatter by recursive vector halving.
	AlgRecursiveHalving = Algorithm(coll.RecursiveHalving)
	// AlgRabenseifner: reduce-scatter by recursive halving, then
	// allgather by recursive doubling (or a gather to the root, for
	// Reduce): bandwidth-optimal for long vectors.
	AlgRabenseifner = Algorithm(coll.Rabenseifner)
	// AlgScatterAllgather: van de Geijn's broadcast, a binomial scatter
	// followed by a ring allgather.
	AlgScatterAllgather = Algorithm(coll.ScatterAllgather)
	// AlgRing: n-1 steps around a ring.
	AlgRing = Algorithm(coll.Ring)
	// AlgBruck: Bruck et al.'s ⌈log2 n⌉-step algorithms for allgather and
	// alltoall (small blocks).
	AlgBruck = Algorithm(coll.Bruck)
	// AlgPairwise: n-1 steps, each rank exchanging with one partner.
	AlgPairwise = Algorithm(coll.Pairwise)
	// AlgHierarchical: two levels, on a communicator whose members run in
	// several processes, several of them in some: the members of each
	// process meet through shared memory, one leader per process talks to
	// the other leaders (coll_hier.go).
	AlgHierarchical = Algorithm(coll.Hierarchical)
)

func (a Algorithm) String() string { return coll.Algorithm(a).String() }

// Algorithms returns the algorithms that can be chosen for coll with
// [Comm.SetAlgorithm] (AlgAuto aside), or nil for an unknown collective.
func Algorithms(coll Collective) []Algorithm {
	return menu(coll)
}

// menu returns coll's menu of k in this package's type (nil for an unknown
// collective).
func menu(k Collective) []Algorithm {
	var m []Algorithm
	for _, a := range coll.Menu(coll.Collective(k)) {
		m = append(m, Algorithm(a))
	}
	return m
}

// offers reports whether alg can be pinned for k.
func offers(k Collective, alg Algorithm) bool {
	return coll.Offers(coll.Collective(k), coll.Algorithm(alg))
}

// SetAlgorithm pins the algorithm c uses for coll on this rank; AlgAuto
// restores the automatic choice. Every member must pin the same algorithm
// (a mismatch fails the collectives, or, between the two families, is
// reported as a deadlock). It fails with [ErrArg] for an algorithm that coll
// does not have, and with [ErrNotSupported] for AlgSharedMemory on a
// communicator whose members do not all run in this process. The setting
// is c's alone: communicators made from c start with AlgAuto. Like the
// collectives, it must not be called concurrently with them on c (it
// fails with [ErrConcurrent] then).
//
// The non-blocking collectives use the point-to-point algorithm pinned
// here, or the automatic choice among them.
func (c *Comm) SetAlgorithm(coll Collective, alg Algorithm) error {
	if err := c.begin("set algorithm"); err != nil {
		return err
	}
	defer c.leave()
	if coll >= numColls {
		return fmt.Errorf("comm: set algorithm for %v: %w", coll, ErrArg)
	}
	if alg != AlgAuto && !offers(coll, alg) {
		return fmt.Errorf("comm: %v has no %v algorithm: %w", coll, alg, ErrArg)
	}
	if alg == AlgSharedMemory && !c.sharedMemory() {
		return fmt.Errorf("comm: %v on %s: members in other processes: %w", alg, c, ErrNotSupported)
	}
	if alg == AlgHierarchical && c.hier() == nil {
		return fmt.Errorf("comm: %v on %s: needs members in several processes, several in some, each process's a range of ranks: %w", alg, c, ErrNotSupported)
	}
	c.state().algs[coll] = alg
	return nil
}

// Algorithm returns the algorithm pinned for coll on this rank (AlgAuto
// when none is).
func (c *Comm) Algorithm(coll Collective) Algorithm {
	if c == nil || c.cst == nil || coll >= numColls {
		return AlgAuto
	}
	return c.cst.algs[coll]
}

// collState is one rank's collective state for a communicator: settings,
// the shared-memory table and the caches. Only the rank's goroutine that
// calls c's collectives uses it (collectives are called one at a time).
type collState struct {
	// What every collective call reads, and a shared-memory one writes,
	// first, in the object's first cache lines (collStatePad aligns it
	// to them): on 100,000 ranks every line a call touches is a cache
	// miss, as a hundred thousand other ranks ran since this one's last.
	shm   *shmComm // nil until the first shared-memory collective
	gen   uint64   // shared-memory collectives so far: parity selects slots and staging
	held  [2]bool  // slots[p][rank] may name buffers (a barrier leaves an empty slot unwritten)
	local int8     // sharedMemory: 0 not known yet, 1 yes, -1 no
	algs  [numColls]Algorithm
	call  shmCall // the shared-memory collective in progress (one at a time)

	hier     *hierComms // two-level collectives (coll_hier.go); nil when c has no such shape
	hierSeen bool       // hier has been worked out

	stage    [2][]byte
	gateComm *Comm // c's collective context, named for deadlock reports

	scratch []byte    // point-to-point algorithms' working memory, kept while small
	views   [][]byte  // scratch's buffers as the last call cut it
	p2p     *collCall // the blocking point-to-point call, reused (Comm.call)

	quiet bool // a non-blocking collective's private communicator: its calls wait quietly (coll_nonblocking.go)
	// shared: a non-blocking or persistent collective's private
	// communicator whose members all run in this process: its long
	// vectors are read in place in the members' buffers, which a
	// persistent one's members (keep) exchange once, into bufs
	// (coll_nonblocking_shm.go)
	shared, keep bool
	bufs         []*nbBufs

	// A non-blocking or persistent collective's private communicator: its
	// calls agree on their arguments first (coll_agree.go), until one
	// agreement succeeds (agreed).
	private, agreed bool

	nbSeq uint64  // non-blocking collectives and persistent starts that met in c's table so far (coll_nonblocking_meet.go)
	nbl   *nbLink // c's table before it has a shared-memory one, when Dup or Split made it (nbTable)

	_ [collStatePad]byte
}

// collStatePad fills collState to 384 bytes, a size class whose objects
// the allocator places at multiples of 64 bytes (cache lines) from a
// page; TestHotLayout checks it.
const collStatePad = 8

func (c *Comm) state() *collState {
	if c.cst == nil {
		c.cst = &collState{}
	}
	return c.cst
}

// sharedMemory reports whether every member of c runs in this process, so
// that the shared-memory algorithms may read their buffers.
func (c *Comm) sharedMemory() bool {
	st := c.state()
	if st.local == 0 {
		st.local = 1
		// In a world with no device every rank is here: no scan (a scan
		// per member is n² work on the first collective of n ranks).
		for i := 0; i < c.size && !c.ep.AllLocal(); i++ {
			if !c.ep.IsLocal(c.worldOf(i)) {
				st.local = -1
				break
			}
		}
	}
	return st.local > 0
}

// pick returns the algorithm that the collective k in form runs on c for
// a message of n bytes (see [coll.Select], whose table makes the choice).
// c's placement is looked up only where the choice depends on it.
func (c *Comm) pick(k coll.Collective, form coll.Form, n int) coll.Algorithm {
	ch := coll.Choice{Coll: k, Form: form, Bytes: n, Ranks: c.size, Pinned: coll.Algorithm(c.state().algs[k])}
	if ch.Pinned == coll.Auto && form != coll.NonBlocking {
		switch {
		case c.sharedMemory():
			ch.Where = coll.Local
		case c.hier() != nil:
			ch.Where = coll.Hybrid
		}
	}
	alg := coll.Select(ch)
	if c.ct != nil {
		c.ct.picked(alg, n)
	}
	return alg
}

// Tags on the collective context (ctx|1). The range 100–199 belongs to the
// collectives in this package's coll_*.go files. One tag per algorithm step
// lets a receiver see that its peer runs another collective or algorithm.
// Tags on the collective context (ctx|1). The range 100–199 belongs to
// the collectives: those below are this package's, and package coll's
// algorithms use the others (coll/tags.go), among them poison (190–193),
// whose meaning the value collectives share through coll.Call.
const (
	tagCollSetup   = 100 // shared-memory table: rank 0 hands it to every rank
	tagCollGate    = 101 // the posted request ranks wait on at a gate
	tagCollNBDone  = 102 // a non-blocking collective's request
	tagValue       = 160
	tagGatherValue = 161
)

// colorNonBlocking derives the private context of a non-blocking
// collective from its parent's (see childContext and agree.go's colors).
const colorNonBlocking = -20

// Collective checks that do not communicate.

func (c *Comm) collUsable(what string) error {
	if err := c.usable(); err != nil {
		return collErr(what, err)
	}
	return nil
}

func checkType(what string, t Type) error {
	if !t.Valid() || t == Value {
		return fmt.Errorf("comm: %s of %v: %w", what, t, ErrArg)
	}
	return nil
}

func (c *Comm) checkRoot(what string, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("comm: %s with root %d of %d: %w", what, root, c.size, ErrRank)
	}
	return nil
}

// whole reports an error unless b holds whole elements of t.
func whole(what, name string, b []byte, t Type) error {
	if !t.holds(len(b)) {
		return fmt.Errorf("comm: %s: %s of %d bytes is not a whole number of %v: %w", what, name, len(b), t, ErrArg)
	}
	return nil
}

// same reports whether a and b are the same slice (in place, MPI_IN_PLACE).
func same(a, b []byte) bool { return coll.Same(a, b) }

// overlap reports whether a and b share memory.
func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// checkVector checks a (counts, displs) pair in elements of esz bytes
// against a buffer of blen bytes and returns byte offsets (off[i],
// off[i]+n[i]): displs nil means packed in rank order. A count or a
// displacement whose size in bytes overflows an int, or a block that
// does not fit the buffer, fails with ErrArg: the caller's arguments
// disagree with themselves (as the neighbourhood collectives' do).
func checkVector(what, name string, counts, displs []int, size, blen, esz int) (off, n []int, err error) {
	if len(counts) != size || displs != nil && len(displs) != size {
		return nil, nil, fmt.Errorf("comm: %s: %s of %d counts and %d displacements for %d ranks: %w",
			what, name, len(counts), len(displs), size, ErrArg)
	}
	off, n = make([]int, size), make([]int, size)
	at := 0
	for i, k := range counts {
		d := at
		if displs != nil {
			d = displs[i]
		}
		if k < 0 || d < 0 {
			return nil, nil, fmt.Errorf("comm: %s: %s: count %d at displacement %d for rank %d: %w", what, name, k, d, i, ErrArg)
		}
		o, okOff := mulInt(d, esz)
		m, okLen := mulInt(k, esz)
		if !okOff || !okLen {
			return nil, nil, fmt.Errorf("comm: %s: %s: count %d at displacement %d for rank %d: more than %d bytes: %w",
				what, name, k, d, i, math.MaxInt, ErrArg)
		}
		if o > blen || m > blen-o {
			return nil, nil, fmt.Errorf("comm: %s: %s: %d elements at %d for rank %d overrun a buffer of %d: %w",
				what, name, k, d, i, blen/esz, ErrArg)
		}
		off[i], n[i] = o, m
		at = d + k // no overflow: d and k are within blen
	}
	return off, n, nil
}

// mulInt returns a·b for a, b ≥ 0, and whether it fits an int: the size in
// bytes of a count of elements, or of a displacement, that a caller
// passed. Every such product in package comm goes through it.
func mulInt(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int(lo), hi == 0 && lo <= math.MaxInt
}

// alignedBytes returns n bytes aligned to 8 (for every element type).
func alignedBytes(n int) []byte {
	if n == 0 {
		return nil
	}
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// maxCachedScratch bounds the working memory a rank keeps between calls.
const maxCachedScratch = 1 << 20

// scratch returns working memory for k buffers of n bytes each, each at a
// multiple of 64 bytes. It is the caller's until its next collective on c.
func (c *Comm) scratch(k, n int) [][]byte {
	stride := (n + 63) &^ 63
	var b []byte
	st := c.state()
	if k*stride <= maxCachedScratch {
		if len(st.scratch) < k*stride {
			st.scratch = alignedBytes(max(k*stride, 4096))
		}
		b = st.scratch
	} else {
		b = alignedBytes(k * stride)
	}
	if cap(st.views) < k { // the slice headers are kept too: a call allocates nothing
		st.views = make([][]byte, k)
	}
	out := st.views[:k]
	for i := range out {
		out[i] = b[i*stride : i*stride+n : i*stride+n]
	}
	return out
}
