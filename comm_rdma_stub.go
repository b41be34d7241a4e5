//go:build !rdma

package mpgo

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// WithFabric selects the RDMA backend (libfabric) for [Join] and [Main]
// under a launcher. This build has none (build with -tags rdma and
// Debian's libfabric-dev): the option fails with an error wrapping
// [comm.ErrNotSupported], and so does MPGO_BACKEND=rdma.
func WithFabric(provider string) Option {
	return func(c *config) error {
		return fmt.Errorf("mpgo: WithFabric(%q): the RDMA backend: %w (build with -tags rdma)", provider, comm.ErrNotSupported)
	}
}

// FabricSupported reports whether this build has the RDMA backend.
const FabricSupported = false
