package coll

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// testdata/select.golden holds the choices package comm made before the
// table existed (computed by the selection code then spread over comm's
// coll_*.go files, commit "comm: a golden file of today's collective
// algorithm choices"); Select must make the same ones.

var goldenForms = map[string]struct {
	coll Collective
	form Form
}{
	"barrier": {Barrier, Plain}, "ibarrier": {Barrier, NonBlocking},
	"bcast": {Bcast, Plain}, "ibcast": {Bcast, NonBlocking}, "bcast-value": {Bcast, Value},
	"reduce": {Reduce, Plain}, "allreduce": {Allreduce, Plain}, "iallreduce": {Allreduce, NonBlocking},
	"gather": {Gather, Plain}, "gatherv": {Gather, Vector}, "gather-value": {Gather, Value},
	"scatter": {Scatter, Plain}, "scatterv": {Scatter, Vector},
	"allgather": {Allgather, Plain}, "allgatherv": {Allgather, Vector},
	"alltoall": {Alltoall, Plain}, "alltoallv": {Alltoall, Vector},
	"reduce-scatter": {ReduceScatter, Plain}, "scan": {Scan, Plain},
}

var goldenWhere = map[string]Placement{"shared-memory": Local, "processes": Hybrid, "point-to-point": Remote}

func TestSelect(t *testing.T) {
	b, err := os.ReadFile("testdata/select.golden")
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	codes := map[byte]Algorithm{}
	rows := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch {
		case strings.HasPrefix(line, "# per rank count"):
			for _, f := range strings.Fields(line[strings.Index(line, ":")+1:]) {
				n, _ := strconv.Atoi(f)
				sizes = append(sizes, n)
			}
			continue
		case strings.HasPrefix(line, "# a="):
			for _, f := range strings.Fields(line[1:]) {
				for a := range NumAlgs {
					if a.String() == f[2:] {
						codes[f[0]] = a
					}
				}
			}
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		head, cells, _ := strings.Cut(line, ": ")
		f := strings.Fields(head)
		staged := f[0] == "staged"
		for _, cell := range strings.Fields(cells) {
			ranks, want, _ := strings.Cut(cell, "=")
			n, _ := strconv.Atoi(ranks)
			for i, size := range sizes {
				rows++
				if staged {
					var got bool
					if f[1] == "alltoall-in-place" {
						got = true // comm stages an in-place alltoall whatever its size
					} else {
						got = Staged(goldenForms[f[1]].coll, size, n)
					}
					if got != (want[i] == '1') {
						t.Errorf("%s n=%d size=%d: Staged %v, was %c", head, n, size, got, want[i])
					}
					continue
				}
				k, ok := goldenForms[f[0]]
				if !ok {
					t.Fatalf("unknown form %q", f[0])
				}
				pin := Auto
				for a := range NumAlgs {
					if "pin="+a.String() == f[2] {
						pin = a
					}
				}
				c := Choice{Coll: k.coll, Form: k.form, Bytes: size, Ranks: n, Where: goldenWhere[f[1]], Pinned: pin}
				if got := Select(c); got != codes[want[i]] {
					t.Errorf("%s n=%d size=%d: Select = %v, was %v", head, n, size, got, codes[want[i]])
				}
			}
		}
	}
	if rows < 10000 || len(codes) != int(NumAlgs) {
		t.Fatalf("read %d choices and %d algorithm codes: golden file not parsed", rows, len(codes))
	}
}

// TestSelectThresholds pins the edges of the table by name, so that a
// change of a threshold reads as one here.
func TestSelectThresholds(t *testing.T) {
	tests := []struct {
		name string
		c    Choice
		want Algorithm
	}{
		{"bcast short", Choice{Coll: Bcast, Bytes: bcastLong - 1, Ranks: 8}, Binomial},
		{"bcast long", Choice{Coll: Bcast, Bytes: bcastLong, Ranks: 8}, ScatterAllgather},
		{"bcast long few ranks", Choice{Coll: Bcast, Bytes: bcastLong, Ranks: 7}, Binomial},
		{"allreduce short", Choice{Coll: Allreduce, Bytes: reduceShort, Ranks: 4}, RecursiveDoubling},
		{"allreduce long", Choice{Coll: Allreduce, Bytes: reduceShort + 1, Ranks: 4}, Rabenseifner},
		{"allreduce thin segments", Choice{Coll: Allreduce, Bytes: 64*64 - 1, Ranks: 64}, RecursiveDoubling},
		{"gather block", Choice{Coll: Gather, Bytes: rootedShort, Ranks: 4}, Flat},
		{"allgather total", Choice{Coll: Allgather, Bytes: allgatherShort / 8, Ranks: 8}, Ring},
		{"alltoall small many", Choice{Coll: Alltoall, Bytes: alltoallShortBlock, Ranks: 8}, Bruck},
		{"shared memory", Choice{Coll: Scan, Bytes: 1 << 20, Ranks: 4, Where: Local}, SharedMemory},
		{"two levels", Choice{Coll: Barrier, Ranks: 4, Where: Hybrid}, Hierarchical},
		{"two levels, none", Choice{Coll: Gather, Ranks: 4, Where: Hybrid}, Binomial},
		{"non-blocking ignores shm pin", Choice{Coll: Bcast, Form: NonBlocking, Ranks: 2, Pinned: SharedMemory}, Binomial},
		{"vector ignores binomial pin", Choice{Coll: Gather, Form: Vector, Ranks: 2, Pinned: Binomial}, Flat},
		{"value under two levels", Choice{Coll: Bcast, Form: Value, Ranks: 2, Where: Hybrid}, Binomial},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Select(tt.c); got != tt.want {
				t.Errorf("Select(%+v) = %v, want %v", tt.c, got, tt.want)
			}
		})
	}
}

// TestStagedCrowded: where ranks outnumber the Ps, a broadcast stages up
// to CrowdedBcastStageLimit; every other collective as Staged says.
func TestStagedCrowded(t *testing.T) {
	for _, n := range []int{0, BcastStageLimit, BcastStageLimit + 1, CrowdedBcastStageLimit, CrowdedBcastStageLimit + 1} {
		if got, want := StagedCrowded(Bcast, n, 8), n <= CrowdedBcastStageLimit; got != want {
			t.Errorf("StagedCrowded(Bcast, %d, 8) = %v, want %v", n, got, want)
		}
		for _, c := range []Collective{Gather, Scatter, Allgather, Alltoall, Reduce, Allreduce, Scan, ReduceScatter} {
			if got, want := StagedCrowded(c, n, 8), Staged(c, n, 8); got != want {
				t.Errorf("StagedCrowded(%v, %d, 8) = %v, Staged says %v", c, n, got, want)
			}
		}
	}
}
