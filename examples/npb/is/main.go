// IS is the Integer Sort kernel of the NAS Parallel Benchmarks (NPB 3.4,
// MPI version) on mpgo: every rank generates its share of keys with NPB's
// generator (sums of four uniform numbers, so roughly Gaussian), and each
// of 10 timed iterations ranks all keys by a distributed bucket sort:
// local bucket counts, an Allreduce of the counts to split the key range
// among the ranks, an Alltoall of the send counts and an Alltoallv of the
// keys, then a counting sort of the keys each rank received. Partial
// verification checks the ranks of five keys per iteration against NPB's
// tables; full verification sorts the last ranking and checks the order,
// across ranks too (the largest key goes to the next rank).
//
// Run it with
//
//	go run ./examples/npb/is -class S -np 4
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o is ./examples/npb/is && mpiexec -n 4 ./is -class S
//
// The number of ranks must be a power of two (at most 128 for class S,
// 1024 otherwise), as in NPB. Classes S, W, A, B and C are supported.
package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"github.com/mpgo/mpgo/typed"
)

const (
	maxIterations = 10
	testArraySize = 5
	seed          = 314159265.0
	mult          = 1220703125.0
	tagVerify     = 1000
)

// params are a class's sizes (as logarithms base 2) and its partial
// verification table: the keys at testIndex must rank at testRank,
// shifted by the iteration as rankShift says.
type params struct {
	totalKeysLog2, maxKeyLog2, numBucketsLog2 int
	testIndex, testRank                       [testArraySize]int
}

var classes = map[npb.Class]params{
	'S': {16, 11, 9, [testArraySize]int{48427, 17148, 23627, 62548, 4431},
		[testArraySize]int{0, 18, 346, 64917, 65463}},
	'W': {20, 16, 10, [testArraySize]int{357773, 934767, 875723, 898999, 404505},
		[testArraySize]int{1249, 11698, 1039987, 1043896, 1048018}},
	'A': {23, 19, 10, [testArraySize]int{2112377, 662041, 5336171, 3642833, 4250760},
		[testArraySize]int{104, 17523, 123928, 8288932, 8388264}},
	'B': {25, 21, 10, [testArraySize]int{41869, 812306, 5102857, 18232239, 26860214},
		[testArraySize]int{33422937, 10244, 59149, 33135281, 99}},
	'C': {27, 23, 10, [testArraySize]int{44172927, 72999161, 74326391, 129606274, 21736814},
		[testArraySize]int{61147, 882988, 266290, 133997595, 133525895}},
}

// rankShift is how test key i's expected rank moves with the iteration
// in class c: each iteration plants the keys iteration and
// maxKey-iteration, which shifts some test keys' ranks up and others'
// down (NPB's table).
func rankShift(c npb.Class, i, iteration int) int {
	switch c {
	case 'S', 'C':
		if i <= 2 {
			return iteration
		}
		return -iteration
	case 'W':
		if i < 2 {
			return iteration - 2
		}
		return -iteration
	case 'A':
		if i <= 2 {
			return iteration - 1
		}
		return -(iteration - 1)
	case 'B':
		if i == 1 || i == 2 || i == 4 {
			return iteration
		}
		return -iteration
	}
	panic("is: rankShift: unknown class " + c.String())
}

func main() { npb.Main("is", 'S', intSort) }

// run runs IS of class on np goroutine ranks and returns rank 0's result.
func run(np int, class npb.Class, out io.Writer) (npb.Result, error) {
	return npb.Run(np, class, out, intSort)
}

// sorter is one rank's state: NPB's global arrays.
type sorter struct {
	keys  *typed.Comm[int32] // keys and bucket counts (NPB's MPI_INT)
	ints  *typed.Comm[int]   // send/receive counts
	class npb.Class
	p     params
	rank  int
	size  int

	numKeys        int // keys generated per rank
	maxKey         int
	numBuckets     int
	shift          int // key >> shift is its bucket
	keyArray       []int32
	keyBuff1       []int32 // keys by bucket; then key populations and ranks
	keyBuff2       []int32 // the keys this rank ranks
	bucketSize     []int32 // numBuckets counts, then the test keys found here
	bucketTotals   []int32
	bucketPtrs     []int32
	firstBucket    []int // process_bucket_distrib_ptr1: first bucket of each rank
	lastBucket     []int // process_bucket_distrib_ptr2: last bucket of each rank
	sendCount      []int
	recvCount      []int
	sendDispl      []int
	recvDispl      []int
	passed         int   // verification tests passed on this rank
	minKeyVal      int32 // of the last ranking, for full verification
	totalLocalKeys int
	out            io.Writer // rank 0's; nil elsewhere
}

// intSort runs the kernel on the ranks of world; rank 0 writes NPB's
// report to out and returns the result (other ranks return a zero
// Result). A failed verification is an error on rank 0, after the
// report.
func intSort(world *comm.Comm, class npb.Class, out io.Writer) (npb.Result, error) {
	p, ok := classes[class]
	if !ok {
		return npb.Result{}, fmt.Errorf("is: class %v: not supported (S, W, A, B, C)", class)
	}
	size := world.Size()
	maxProcs := 1024
	if class == 'S' {
		maxProcs = 128
	}
	if size&(size-1) != 0 || size > maxProcs {
		return npb.Result{}, fmt.Errorf("is: %d ranks: need a power of two up to %d for class %v", size, maxProcs, class)
	}
	s := newSorter(world, class, p)
	totalKeys := 1 << p.totalKeysLog2
	if s.rank == 0 {
		s.out = out
		fmt.Fprintf(out, "\n\n NAS Parallel Benchmarks 3.4 -- IS Benchmark (mpgo)\n\n")
		fmt.Fprintf(out, " Size:  %d  (class %v)\n", totalKeys, class)
		fmt.Fprintf(out, " Iterations:   %d\n", maxIterations)
		fmt.Fprintf(out, " Total number of processes:  %d\n", size)
	}

	// Each rank's keys continue the one sequence of 4·totalKeys numbers
	// where the previous rank's stopped.
	s.createSeq(findMySeed(s.rank, size, 4*int64(totalKeys), seed, mult), mult)

	// One untimed iteration to touch all code and data.
	if err := s.rankKeys(1); err != nil {
		return npb.Result{}, err
	}
	s.passed = 0
	if s.rank == 0 && class != 'S' {
		fmt.Fprintf(out, "\n   iteration\n")
	}

	start := time.Now()
	for it := 1; it <= maxIterations; it++ {
		if s.out != nil && class != 'S' {
			fmt.Fprintf(out, "        %d\n", it)
		}
		if err := s.rankKeys(it); err != nil {
			return npb.Result{}, err
		}
	}
	elapsed := []float64{time.Since(start).Seconds()}
	maxTime := make([]float64, 1)
	if err := typed.Of[float64](world).Reduce(elapsed, maxTime, typed.Max, 0); err != nil {
		return npb.Result{}, err
	}

	// Untimed: sort by the last ranking and check the order.
	if err := s.fullVerify(); err != nil {
		return npb.Result{}, err
	}
	passed := []int{s.passed}
	total := make([]int, 1)
	if err := s.ints.Reduce(passed, total, typed.Sum, 0); err != nil {
		return npb.Result{}, err
	}
	if s.rank != 0 {
		return npb.Result{}, nil
	}

	want := testArraySize*maxIterations + size
	res := npb.Result{
		Name:       "IS",
		Class:      class,
		Size:       fmt.Sprint(totalKeys),
		Iterations: maxIterations,
		Time:       time.Duration(maxTime[0] * float64(time.Second)),
		Procs:      size,
		Mops:       float64(maxIterations) * float64(totalKeys) / maxTime[0] / 1e6,
		OpType:     "keys ranked",
		Verified:   total[0] == want,
	}
	res.Print(out)
	if !res.Verified {
		return res, fmt.Errorf("is: class %v: verification failed: %d of %d tests passed", class, total[0], want)
	}
	return res, nil
}

func newSorter(world *comm.Comm, class npb.Class, p params) *sorter {
	size := world.Size()
	numKeys := (1 << p.totalKeysLog2) / size
	sizeOfBuffers := 3 * numKeys / 2
	switch {
	case size >= 1024:
		sizeOfBuffers = 13 * numKeys / 2
	case size >= 512:
		sizeOfBuffers = 4 * numKeys
	case size >= 256:
		sizeOfBuffers = 5 * numKeys / 2
	}
	maxKey := 1 << p.maxKeyLog2
	numBuckets := 1 << p.numBucketsLog2
	return &sorter{
		keys:         typed.Of[int32](world),
		ints:         typed.Of[int](world),
		class:        class,
		p:            p,
		rank:         world.Rank(),
		size:         size,
		numKeys:      numKeys,
		maxKey:       maxKey,
		numBuckets:   numBuckets,
		shift:        p.maxKeyLog2 - p.numBucketsLog2,
		keyArray:     make([]int32, sizeOfBuffers),
		keyBuff1:     make([]int32, max(sizeOfBuffers, maxKey)), // also counts a rank's key range
		keyBuff2:     make([]int32, sizeOfBuffers),
		bucketSize:   make([]int32, numBuckets+testArraySize),
		bucketTotals: make([]int32, numBuckets+testArraySize),
		bucketPtrs:   make([]int32, numBuckets),
		firstBucket:  make([]int, size),
		lastBucket:   make([]int, size),
		sendCount:    make([]int, size),
		recvCount:    make([]int, size),
		sendDispl:    make([]int, size),
		recvDispl:    make([]int, size),
	}
}

// findMySeed returns the seed of rank kn's part of a sequence of nn
// numbers split evenly among np ranks: s·a^(kn·nn/np) mod 2^46.
func findMySeed(kn, np int, nn int64, s, a float64) float64 {
	mq := 0
	for nq := nn / int64(np); nq > 1; nq /= 2 {
		mq++
	}
	t := s
	npb.Randlc(&t, npb.Pow46(a, int64(kn)<<mq))
	return t
}

// createSeq generates this rank's keys: maxKey/4 times a sum of four
// uniform numbers.
func (s *sorter) createSeq(seed, a float64) {
	k := float64(s.maxKey / 4)
	for i := range s.numKeys {
		x := npb.Randlc(&seed, a)
		x += npb.Randlc(&seed, a)
		x += npb.Randlc(&seed, a)
		x += npb.Randlc(&seed, a)
		s.keyArray[i] = int32(k * x)
	}
}

// rankKeys is NPB's rank(iteration): one distributed ranking of all keys,
// with the partial verification of the test keys that fall in this
// rank's range.
func (s *sorter) rankKeys(iteration int) error {
	nb, shift := s.numBuckets, s.shift
	if s.rank == 0 {
		s.keyArray[iteration] = int32(iteration)
		s.keyArray[iteration+maxIterations] = int32(s.maxKey - iteration)
	}
	clear(s.bucketSize)
	clear(s.bucketTotals)
	clear(s.firstBucket)
	clear(s.lastBucket)

	// The test keys held here ride along, summed with zeros elsewhere,
	// at the top of bucketSize.
	for i, idx := range s.p.testIndex {
		if idx/s.numKeys == s.rank {
			s.bucketSize[nb+i] = s.keyArray[idx%s.numKeys]
		}
	}

	keys := s.keyArray[:s.numKeys]
	counts := s.bucketSize[:nb]
	for _, k := range keys {
		counts[k>>shift]++
	}
	ptrs := s.bucketPtrs
	ptrs[0] = 0
	for i := 1; i < nb; i++ {
		ptrs[i] = ptrs[i-1] + counts[i-1]
	}
	buff1 := s.keyBuff1
	for _, k := range keys {
		b := k >> shift
		buff1[ptrs[b]] = k
		ptrs[b]++
	}

	// Bucket totals of the whole problem decide who ranks which buckets.
	if err := s.keys.Allreduce(s.bucketSize, s.bucketTotals, typed.Sum); err != nil {
		return err
	}
	totals := s.bucketTotals[:nb]

	// Rank j gets buckets until the running total passes (j+1)·numKeys.
	var acc, localAcc int
	j := 0
	s.sendDispl[0] = 0
	s.firstBucket[0] = 0
	for i := range nb {
		acc += int(totals[i])
		localAcc += int(counts[i])
		if acc >= (j+1)*s.numKeys {
			s.sendCount[j] = localAcc
			if j != 0 {
				s.sendDispl[j] = s.sendDispl[j-1] + s.sendCount[j-1]
				s.firstBucket[j] = s.lastBucket[j-1] + 1
			}
			s.lastBucket[j] = i
			j++
			localAcc = 0
		}
	}
	// Ranks left without buckets (possible when ranks approach buckets)
	// get nothing: an empty bucket range (1..0).
	for ; j < s.size; j++ {
		s.sendCount[j] = 0
		s.sendDispl[j] = s.sendDispl[j-1] + s.sendCount[j-1]
		s.firstBucket[j] = 1
	}

	// Redistribute: the counts first, then the keys.
	if err := s.ints.Alltoall(s.sendCount, s.recvCount); err != nil {
		return err
	}
	s.recvDispl[0] = 0
	for i := 1; i < s.size; i++ {
		s.recvDispl[i] = s.recvDispl[i-1] + s.recvCount[i-1]
	}
	if err := s.keys.Alltoallv(buff1, s.sendCount, s.sendDispl, s.keyBuff2, s.recvCount, s.recvDispl); err != nil {
		return err
	}

	// This rank's buckets bound its keys' values.
	minKey := s.firstBucket[s.rank] << shift
	maxKey := (s.lastBucket[s.rank]+1)<<shift - 1
	pop := buff1[:max(maxKey-minKey+1, 0)] // pop[k-minKey]: keys ≤ k held here
	clear(pop)

	// Keys ranked on lower ranks, and keys ranked here.
	m := 0
	for k := range s.rank {
		for i := s.firstBucket[k]; i <= s.lastBucket[k]; i++ {
			m += int(totals[i])
		}
	}
	nlocal := 0
	for i := s.firstBucket[s.rank]; i <= s.lastBucket[s.rank]; i++ {
		nlocal += int(totals[i])
	}

	// Counting sort: populations, then running sums.
	off := int32(minKey)
	for _, k := range s.keyBuff2[:nlocal] {
		pop[k-off]++
	}
	for i := 1; i < len(pop); i++ {
		pop[i] += pop[i-1]
	}

	// Partial verification: the rank of test key k is the number of keys
	// below it, m of them on lower ranks.
	for i := range testArraySize {
		k := int(s.bucketTotals[nb+i])
		if minKey <= k && k <= maxKey {
			keyRank := m
			if k > minKey {
				keyRank += int(pop[k-1-minKey])
			}
			testRank := s.p.testRank[i] + rankShift(s.class, i, iteration)
			if keyRank == testRank {
				s.passed++
			} else {
				fmt.Fprintf(os.Stderr, "Failed partial verification: iteration %d, processor %d, test key %d, key rank %d (want %d)\n",
					iteration, s.rank, i, keyRank, testRank)
			}
		}
	}

	if iteration == maxIterations {
		s.minKeyVal = off
		s.totalLocalKeys = nlocal
	}
	return nil
}

// fullVerify sorts the keys of the last ranking by their ranks and counts
// keys out of order, here and against the previous rank's largest key.
func (s *sorter) fullVerify() error {
	ranks := s.keyBuff1 // running key populations of the last ranking
	for _, k := range s.keyBuff2[:s.totalLocalKeys] {
		r := &ranks[k-s.minKeyVal]
		*r--
		s.keyArray[*r] = k
	}
	sorted := s.keyArray[:s.totalLocalKeys]
	last := max(s.totalLocalKeys-1, 0)

	// The largest key goes to the next rank.
	prev := make([]int32, 1)
	var req *comm.Request
	if s.rank > 0 {
		var err error
		if req, err = s.keys.Irecv(prev, s.rank-1, tagVerify); err != nil {
			return err
		}
	}
	if s.rank < s.size-1 {
		if err := s.keys.Send(s.keyArray[last:last+1], s.rank+1, tagVerify); err != nil {
			return err
		}
	}
	if req != nil {
		if _, err := req.Wait(); err != nil {
			return err
		}
	}

	bad := 0
	if s.rank > 0 && len(sorted) > 0 && prev[0] > sorted[0] {
		bad++
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1] > sorted[i] {
			bad++
		}
	}
	if bad != 0 {
		fmt.Fprintf(os.Stderr, "Processor %d:  Full_verify: number of keys out of sort: %d\n", s.rank, bad)
	} else {
		s.passed++
	}
	return nil
}
