package coll

import "fmt"

// Collective names a collective operation whose algorithm can be chosen.
// Package comm's Collective has the same values.
type Collective uint8

// The collectives. The v-variants and the value forms are forms of their
// plain collective ([Form]), and Exscan is one of Scan.
const (
	Barrier Collective = iota
	Bcast
	Reduce
	Allreduce
	Gather
	Scatter
	Allgather
	Alltoall
	ReduceScatter
	Scan
	NumColls
)

var collNames = [NumColls]string{"barrier", "bcast", "reduce", "allreduce", "gather",
	"scatter", "allgather", "alltoall", "reduce-scatter", "scan"}

func (k Collective) String() string {
	if k < NumColls {
		return collNames[k]
	}
	return fmt.Sprintf("Collective(%d)", uint8(k))
}

// Algorithm names a collective algorithm. Package comm's Algorithm has the
// same values, and documents each.
type Algorithm uint8

// The algorithms.
const (
	Auto Algorithm = iota
	SharedMemory
	Dissemination
	Flat
	Binomial
	RecursiveDoubling
	RecursiveHalving
	Rabenseifner
	ScatterAllgather
	Ring
	Bruck
	Pairwise
	Hierarchical
	NumAlgs
)

var algNames = [NumAlgs]string{"auto", "shared-memory", "dissemination", "flat", "binomial",
	"recursive-doubling", "recursive-halving", "rabenseifner", "scatter-allgather", "ring",
	"bruck", "pairwise", "hierarchical"}

func (a Algorithm) String() string {
	if a < NumAlgs {
		return algNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// menu lists the algorithms of each collective, shared memory first.
var menu = [NumColls][]Algorithm{
	Barrier:       {SharedMemory, Dissemination, Hierarchical},
	Bcast:         {SharedMemory, Binomial, ScatterAllgather, Flat, Hierarchical},
	Reduce:        {SharedMemory, Binomial, Rabenseifner, Flat},
	Allreduce:     {SharedMemory, RecursiveDoubling, Rabenseifner, Hierarchical},
	Gather:        {SharedMemory, Binomial, Flat},
	Scatter:       {SharedMemory, Binomial, Flat},
	Allgather:     {SharedMemory, Bruck, Ring},
	Alltoall:      {SharedMemory, Bruck, Pairwise},
	ReduceScatter: {SharedMemory, RecursiveHalving},
	Scan:          {SharedMemory, RecursiveDoubling},
}

// Menu returns the algorithms that can be pinned for c (Auto aside), or
// nil for an unknown collective. The slice is shared: do not modify it.
func Menu(c Collective) []Algorithm {
	if c >= NumColls {
		return nil
	}
	return menu[c]
}

// Offers reports whether alg can be pinned for c.
func Offers(c Collective, alg Algorithm) bool {
	for _, a := range Menu(c) {
		if a == alg {
			return true
		}
	}
	return false
}
