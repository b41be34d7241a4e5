package comm

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The golden file of algorithm choices, comm/internal/coll/testdata/
// select.golden, pins which algorithm every collective runs for each
// backend shape, pinned setting, rank count and message size. This test
// computes the choices with the selection code as it is spread over the
// coll_*.go files and compares them with the file (-update rewrites it).

var updateGolden = flag.Bool("update", false, "rewrite testdata golden files")

// goldenSizes and goldenRanks straddle every threshold of the choices.
var (
	goldenSizes = []int{0, 8, 64, 256, 257, 1024, 2047, 2048, 2049, 4095, 4096, 4097,
		8192, 12287, 12288, 16384, 16385, 40960, 65536, 65537, 81919, 81920, 1 << 20}
	goldenRanks = []int{2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65}
)

// goldenEntry is one collective in one form, with the choice as the old
// code made it: pick (or pickP2P), then the dispatch of the caller.
type goldenEntry struct {
	name string
	coll Collective
	run  func(c *Comm, n int) Algorithm
}

var goldenEntries = []goldenEntry{
	{"barrier", CollBarrier, func(c *Comm, n int) Algorithm {
		return c.pick(CollBarrier, func() Algorithm { return AlgDissemination })
	}},
	{"ibarrier", CollBarrier, func(c *Comm, n int) Algorithm { return AlgDissemination }},
	{"bcast", CollBcast, func(c *Comm, n int) Algorithm {
		return c.pick(CollBcast, func() Algorithm { return autoBcast(n, c.size) })
	}},
	{"ibcast", CollBcast, func(c *Comm, n int) Algorithm {
		return c.pickP2P(CollBcast, func() Algorithm { return autoBcast(n, c.size) })
	}},
	{"bcast-value", CollBcast, func(c *Comm, n int) Algorithm {
		if c.pick(CollBcast, func() Algorithm { return AlgBinomial }) == AlgSharedMemory {
			return AlgSharedMemory
		}
		return AlgBinomial
	}},
	{"reduce", CollReduce, func(c *Comm, n int) Algorithm {
		alg := c.pick(CollReduce, func() Algorithm {
			if n <= 2<<10 || n < 64*highBit(c.size) {
				return AlgBinomial
			}
			return AlgRabenseifner
		})
		switch alg {
		case AlgSharedMemory, AlgFlat, AlgRabenseifner:
			return alg
		}
		return AlgBinomial
	}},
	{"allreduce", CollAllreduce, func(c *Comm, n int) Algorithm {
		alg := c.pick(CollAllreduce, func() Algorithm { return autoAllreduce(n, c.size) })
		switch alg {
		case AlgSharedMemory, AlgHierarchical, AlgRabenseifner:
			return alg
		}
		return AlgRecursiveDoubling
	}},
	{"iallreduce", CollAllreduce, func(c *Comm, n int) Algorithm {
		if c.pickP2P(CollAllreduce, func() Algorithm { return autoAllreduce(n, c.size) }) == AlgRabenseifner {
			return AlgRabenseifner
		}
		return AlgRecursiveDoubling
	}},
	{"gather", CollGather, func(c *Comm, n int) Algorithm {
		alg := c.pick(CollGather, func() Algorithm { return autoRooted(n) })
		if alg == AlgSharedMemory || alg == AlgBinomial {
			return alg
		}
		return AlgFlat
	}},
	{"gatherv", CollGather, func(c *Comm, n int) Algorithm {
		if c.pick(CollGather, func() Algorithm { return AlgFlat }) == AlgSharedMemory {
			return AlgSharedMemory
		}
		return AlgFlat
	}},
	{"gather-value", CollGather, func(c *Comm, n int) Algorithm {
		if c.pick(CollGather, func() Algorithm { return AlgFlat }) == AlgSharedMemory {
			return AlgSharedMemory
		}
		return AlgFlat
	}},
	{"scatter", CollScatter, func(c *Comm, n int) Algorithm {
		alg := c.pick(CollScatter, func() Algorithm { return autoRooted(n) })
		if alg == AlgSharedMemory || alg == AlgBinomial {
			return alg
		}
		return AlgFlat
	}},
	{"scatterv", CollScatter, func(c *Comm, n int) Algorithm {
		if c.pick(CollScatter, func() Algorithm { return AlgFlat }) == AlgSharedMemory {
			return AlgSharedMemory
		}
		return AlgFlat
	}},
	{"allgather", CollAllgather, func(c *Comm, n int) Algorithm {
		return allgatherGolden(c, n, kAllgather)
	}},
	{"allgatherv", CollAllgather, func(c *Comm, n int) Algorithm {
		return allgatherGolden(c, n, kAllgatherv)
	}},
	{"alltoall", CollAlltoall, func(c *Comm, n int) Algorithm {
		return alltoallGolden(c, n, kAlltoall)
	}},
	{"alltoallv", CollAlltoall, func(c *Comm, n int) Algorithm {
		return alltoallGolden(c, n, kAlltoallv)
	}},
	{"reduce-scatter", CollReduceScatter, func(c *Comm, n int) Algorithm {
		if c.pick(CollReduceScatter, func() Algorithm { return AlgRecursiveHalving }) == AlgSharedMemory {
			return AlgSharedMemory
		}
		return AlgRecursiveHalving
	}},
	{"scan", CollScan, func(c *Comm, n int) Algorithm {
		if c.pick(CollScan, func() Algorithm { return AlgRecursiveDoubling }) == AlgSharedMemory {
			return AlgSharedMemory
		}
		return AlgRecursiveDoubling
	}},
}

func allgatherGolden(c *Comm, n int, kind collKind) Algorithm {
	alg := c.pick(CollAllgather, func() Algorithm {
		if kind == kAllgather && n*c.size < 80<<10 {
			return AlgBruck
		}
		return AlgRing
	})
	if alg == AlgSharedMemory || alg == AlgBruck && kind == kAllgather {
		return alg
	}
	return AlgRing
}

func alltoallGolden(c *Comm, n int, kind collKind) Algorithm {
	alg := c.pick(CollAlltoall, func() Algorithm {
		if kind == kAlltoall && n <= 256 && c.size >= 8 {
			return AlgBruck
		}
		return AlgPairwise
	})
	if alg == AlgSharedMemory || alg == AlgBruck && kind == kAlltoall {
		return alg
	}
	return AlgPairwise
}

// goldenStaged: the shared-memory collectives' choice between staging
// their input (or reducing it on every rank: replicated) and reading it in
// place, by the byte count each rule reads.
var goldenStaged = []struct {
	name   string
	staged func(n, size int) bool
}{
	{"bcast", func(n, size int) bool { return n <= bcastStageLimit }},
	{"gather", func(n, size int) bool { return n <= stageLimit }},
	{"scatter", func(n, size int) bool { return n <= stageLimit }},
	{"allgather", func(n, size int) bool { return n <= stageLimit }},
	{"alltoall", func(n, size int) bool { return n <= stageLimit }},
	{"alltoall-in-place", func(n, size int) bool { return true }},
	{"reduce", replicated},
	{"allreduce", replicated},
	{"scan", replicated},
	{"reduce-scatter", func(n, size int) bool { return n <= stageLimit }},
}

var goldenWhere = []string{"shared-memory", "processes", "point-to-point"}

func goldenComm(where string, size int) *Comm {
	st := &collState{local: -1, hierSeen: true}
	switch where {
	case "shared-memory":
		st.local = 1
	case "processes":
		st.hier = &hierComms{}
	}
	return &Comm{size: size, cst: st}
}

// goldenCode abbreviates an algorithm to one letter, so that a row of the
// file holds every size.
var goldenCode = [numAlgs]byte{AlgAuto: 'a', AlgSharedMemory: 'S', AlgDissemination: 'D', AlgFlat: 'F',
	AlgBinomial: 'B', AlgRecursiveDoubling: 'R', AlgRecursiveHalving: 'H', AlgRabenseifner: 'X',
	AlgScatterAllgather: 'G', AlgRing: 'I', AlgBruck: 'K', AlgPairwise: 'P', AlgHierarchical: 'L'}

func goldenChoices() string {
	var b strings.Builder
	b.WriteString("# One row per collective form, backend shape (where) and pinned algorithm;\n")
	b.WriteString("# per rank count n, one letter per size:")
	for _, n := range goldenSizes {
		fmt.Fprintf(&b, " %d", n)
	}
	b.WriteString("\n#")
	for a := range numAlgs {
		fmt.Fprintf(&b, " %c=%v", goldenCode[a], a)
	}
	b.WriteString("\n")
	for _, e := range goldenEntries {
		for _, where := range goldenWhere {
			pins := append([]Algorithm{AlgAuto}, collAlgs[e.coll]...)
			for _, pin := range pins {
				if pin == AlgSharedMemory && where != "shared-memory" || pin == AlgHierarchical && where != "processes" {
					continue // SetAlgorithm refuses these
				}
				fmt.Fprintf(&b, "%s %s pin=%v:", e.name, where, pin)
				for _, size := range goldenRanks {
					c := goldenComm(where, size)
					c.cst.algs[e.coll] = pin
					fmt.Fprintf(&b, " %d=", size)
					for _, n := range goldenSizes {
						b.WriteByte(goldenCode[e.run(c, n)])
					}
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("# Shared memory: 1 staged (or replicated), 0 in place (direct)\n")
	for _, s := range goldenStaged {
		fmt.Fprintf(&b, "staged %s:", s.name)
		for _, size := range goldenRanks {
			fmt.Fprintf(&b, " %d=", size)
			for _, n := range goldenSizes {
				if s.staged(n, size) {
					b.WriteByte('1')
				} else {
					b.WriteByte('0')
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestSelectGolden(t *testing.T) {
	const file = "internal/coll/testdata/select.golden"
	got := goldenChoices()
	if *updateGolden {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("choices differ from %s", file)
	}
}
