package device

import "fmt"

// KV is the key-value store a launcher gives the processes of a job
// (PMI's put, fence and get; MPICH's Hydra, Slurm, or mpgo's own root for
// Open MPI): backends publish their addresses in it when they open.
// Implementations are used by one goroutine at a time.
type KV interface {
	// Rank is this process's index in [0, Size).
	Rank() int
	// Size is the number of processes in the job.
	Size() int
	// LocalRank and LocalSize describe the processes on this node: this
	// one's index among them and their number.
	LocalRank() int
	LocalSize() int
	// Put stores a pair for the other processes to Get after the next
	// Fence. key and value are printable ASCII without spaces or '='.
	Put(key, value string) error
	// Fence returns once every process of the job called it; the pairs
	// put before it are visible to Get from then on.
	Fence() error
	// Get returns the value another process put before the last Fence.
	Get(key string) (string, error)
	// Abort asks the launcher to end the whole job with exit status code.
	// The launcher may kill this process before Abort returns.
	Abort(code int, msg string) error
	// Finalize tells the launcher this process leaves the job normally.
	Finalize() error
}

// Layout says which process of the job runs each world rank. Every
// process of a job has the same layout; the process numbers are the
// [KV]'s ranks.
type Layout struct {
	// Ranks is the number of ranks in the job's world.
	Ranks int
	// Owner returns the process that runs world rank r, in [0, KV.Size).
	Owner func(r int) int
}

// Describe names the world ranks that process proc runs, for errors:
// "rank 3", "ranks 4-7", or the first few of a layout that scatters them.
func (l Layout) Describe(proc int) string {
	var ranks []int
	for r := range l.Ranks {
		if l.Owner(r) == proc {
			ranks = append(ranks, r)
		}
	}
	switch n := len(ranks); {
	case n == 0:
		return "no ranks"
	case n == 1:
		return fmt.Sprintf("rank %d", ranks[0])
	case ranks[n-1]-ranks[0] == n-1:
		return fmt.Sprintf("ranks %d-%d", ranks[0], ranks[n-1])
	case n <= 4:
		return fmt.Sprintf("ranks %v", ranks)
	}
	return fmt.Sprintf("ranks %v and %d more", ranks[:4], len(ranks)-4)
}
