//go:build !rdma

package comm

import "fmt"

// JoinFabricJob joins the launcher's job over the RDMA backend; this
// build has none (build with -tags rdma and libfabric): it fails with
// an error wrapping ErrNotSupported and ErrBootstrap.
func JoinFabricJob(cfg FabricConfig) (*Job, error) {
	return nil, fmt.Errorf("%w: the RDMA backend: %w (build with -tags rdma)", ErrBootstrap, ErrNotSupported)
}

// FabricStats returns the RDMA device's counters; without the rdma
// build tag no job runs over it.
func (j *Job) FabricStats() (FabricStats, bool) { return FabricStats{}, false }

// FabricInfo describes the job's provider; without the rdma build tag no
// job runs over one.
func (j *Job) FabricInfo() (string, bool) { return "", false }
