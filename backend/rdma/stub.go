//go:build !rdma

package rdma

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/device"
)

// Device is the RDMA backend's device; this build has none (build with
// -tags rdma and libfabric), so no value of it is ever opened.
type Device struct{}

var _ device.Device = (*Device)(nil)

// Open opens the RDMA device; this build has none: it fails with an error
// wrapping device.ErrNotSupported and device.ErrBootstrap.
func Open(kv device.KV, cfg Config) (*Device, error) {
	return nil, fmt.Errorf("%w: the RDMA backend: %w (build with -tags rdma)", device.ErrBootstrap, device.ErrNotSupported)
}

// Start implements [device.Device]; it fails with ErrNotSupported.
func (*Device) Start(device.Engine) error { return errNoBackend }

// Send implements [device.Device]; it fails with ErrNotSupported.
func (*Device) Send(int, int, device.Envelope, []byte, func(error)) error { return errNoBackend }

// Close implements [device.Device].
func (*Device) Close() error { return nil }

// Stats returns the device's counters: none in this build.
func (*Device) Stats() Stats { return Stats{} }

// Info describes the device's provider: none in this build.
func (*Device) Info() string { return "" }

// LendsEager reports whether large eager sends go uncopied: never in this
// build.
func (*Device) LendsEager() bool { return false }

var errNoBackend = fmt.Errorf("comm: the RDMA backend: %w (build with -tags rdma)", device.ErrNotSupported)
