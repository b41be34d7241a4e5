//go:build rdma

package mpgo

import (
	"fmt"
	"strings"

	"github.com/mpgo/mpgo/comm"
)

// WithFabric makes [Join] and [Main], under a launcher, join the job over
// the RDMA backend (libfabric) instead of TCP, with the given provider:
// "verbs" (InfiniBand, RoCE), "efa", "cxi", or, on any machine, "tcp"
// ("net" on libfabric 1.17, which names its old tcp provider tcp) and
// "shm". An empty provider means the one FI_PROVIDER names, or the best
// the machine offers (see [rdma.Config]). MPGO_BACKEND=rdma selects the backend from the
// environment instead (with FI_PROVIDER for the provider).
//
// This build has the backend (build tag rdma). Eager messages travel
// through pre-registered buffers (over net, those too large to batch go
// from the caller's buffer, uncopied), messages at or above the eager limit
// ([WithEagerLimit], default [rdma.DefaultEagerLimit], or
// [rdma.DefaultSocketEagerLimit] over net and tcp, at most
// [rdma.MaxEagerLimit] between processes) by rendezvous with an RMA
// write straight into the receive buffer.
func WithFabric(provider string) Option {
	return func(c *config) error {
		if strings.ContainsAny(provider, " \t\n\x00") {
			return fmt.Errorf("mpgo: WithFabric(%q): %w", provider, comm.ErrArg)
		}
		c.backend, c.provider = "rdma", provider
		return nil
	}
}

// FabricSupported reports whether this build has the RDMA backend.
const FabricSupported = true
