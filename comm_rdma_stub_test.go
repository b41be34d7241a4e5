//go:build !rdma

package mpgo_test

import (
	"errors"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/backend/rdma"
	"github.com/mpgo/mpgo/comm"
)

// Without the rdma tag the RDMA entry points fail with ErrNotSupported.
func TestFabricNotSupported(t *testing.T) {
	if mpgo.FabricSupported {
		t.Fatal("FabricSupported in a build without the rdma tag")
	}
	fn := func(*comm.Comm) error { return nil }
	if err := mpgo.Run(2, fn, mpgo.WithFabric("tcp")); !errors.Is(err, comm.ErrNotSupported) {
		t.Errorf("WithFabric: %v, want ErrNotSupported", err)
	}
	if _, err := rdma.Open(nil, rdma.Config{}); !errors.Is(err, comm.ErrNotSupported) || !errors.Is(err, mpgo.ErrBootstrap) {
		t.Errorf("rdma.Open: %v, want ErrNotSupported and ErrBootstrap", err)
	}
	t.Setenv("MPGO_BACKEND", "rdma")
	if err := mpgo.Join(fn); !errors.Is(err, comm.ErrNotSupported) {
		t.Errorf("Join with MPGO_BACKEND=rdma: %v, want ErrNotSupported", err)
	}
}
