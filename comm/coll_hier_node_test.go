package comm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
)

// runNodes is runProcs with a node map: process p on node node(p).
func runNodes(t *testing.T, procs, k int, node func(proc int) int, fn func(w *comm.Comm) error) []error {
	t.Helper()
	layout := devicetest.Blocks(procs, k)
	devs, _ := devicetest.Loopbacks(procs, layout, comm.DefaultEagerLimit)
	ps := make([]devicetest.Process, procs)
	for p := range procs {
		var ranks []int
		for r := p * k; r < (p+1)*k; r++ {
			ranks = append(ranks, r)
		}
		w, err := comm.NewWorld(layout.Ranks, comm.Config{Local: ranks, Device: devs[p], Process: layout.Owner,
			Node: func(r int) int { return node(layout.Owner(r)) }})
		if err != nil {
			t.Fatal(err)
		}
		ps[p] = devicetest.NewProcess(w, devs[p], ranks)
	}
	return devicetest.Play(ps, fn)
}

// Collectives over processes on several nodes (a node map, as under a
// launcher on several hosts): the two levels are nodes and their
// leaders, which gives two levels even with one rank per process (where
// a split by process has none), and the results of the one-level
// algorithms; where a node's processes are not a range of ranks, the
// levels are processes again.
func TestHierarchicalNodes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		procs, k int
		node     func(p int) int
		twoLevel bool
	}{
		{"2 nodes of 3 processes of 1 rank", 6, 1, func(p int) int { return p / 3 }, true},
		{"2 nodes of 2 processes of 2 ranks", 4, 2, func(p int) int { return p / 2 }, true},
		{"3 nodes of 1 process of 2 ranks", 3, 2, func(p int) int { return p }, true},
		{"nodes not ranges, 1 rank a process", 4, 1, func(p int) int { return p % 2 }, false},
		{"one node of 4 processes of 1 rank", 4, 1, func(int) int { return 0 }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := runNodes(t, tt.procs, tt.k, tt.node, func(w *comm.Comm) error {
				for _, coll := range []comm.Collective{comm.CollBarrier, comm.CollBcast, comm.CollAllreduce} {
					err := w.SetAlgorithm(coll, comm.AlgHierarchical)
					if !tt.twoLevel {
						if !errors.Is(err, comm.ErrNotSupported) {
							return fmt.Errorf("pinning %v to hierarchical: %v, want ErrNotSupported", coll, err)
						}
						continue
					}
					if err != nil {
						return err
					}
				}
				return hierRound(w)
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}
