//go:build rdma

package typed_test

import (
	"testing"

	"github.com/mpgo/mpgo/backend/rdma"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
	"github.com/mpgo/mpgo/typed"
)

// rdmaBuilt says that this test binary has the RDMA backend.
const rdmaBuilt = true

// The window tests across processes run over the RDMA backend too: on
// the one-sided path over tcp;ofi_rxm (writes, reads and atomics of the
// provider's), and on the handlers when MPGO_WINDOW_PATH=am forces them,
// so that both paths pass the same tests. (shm runs under mpiexec only,
// in TestWindowUnderMPIExec: endpoints of one address space share their
// regions, see backend/rdma's fabricHarness.)
func init() {
	type windowJobEntry = struct {
		name string
		run  windowJob
	}
	windowJobs = append(windowJobs,
		windowJobEntry{"rdma-tcp/2x2", overFabricJob("tcp", "")},
		windowJobEntry{"rdma-tcp-am/2x2", overFabricJob("tcp", "am")})
}

// overFabricJob runs 2 processes of 2 ranks joined by the RDMA backend
// over provider, with MPGO_WINDOW_PATH set to path.
func overFabricJob(provider, path string) windowJob {
	return func(t *testing.T, fn func(c *comm.Comm) error) []error {
		t.Setenv(typed.WindowPathEnv, path)
		open := func(kv device.KV, l device.Layout) (device.Device, error) {
			return rdma.Open(kv, rdma.Config{Layout: l, Provider: provider})
		}
		return jobtest.Run(t, jobtest.Join(t, 2, job.Config{RanksPerProcess: 2}, open), fn)
	}
}

// TestWindowFabricPassiveTarget: over tcp;ofi_rxm, a window's target
// takes no part in the Puts, Gets and atomics on its part
// (passiveTarget); forced onto the handlers, the same window works there;
// over net, which has no atomics, the accumulates fall back to the
// handlers while Put and Get stay one-sided, and the target takes no part
// in those.
func TestWindowFabricPassiveTarget(t *testing.T) {
	for _, tc := range []struct{ provider, path, want string }{
		{"tcp", "", "fabric+atomics"},
		{"tcp", "am", "am"},
		{"net", "", "fabric"},
	} {
		t.Run(tc.provider+"/"+tc.want, func(t *testing.T) {
			for r, err := range overFabricJob(tc.provider, tc.path)(t, passiveTarget(tc.want)) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}
