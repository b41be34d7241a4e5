//go:build !linux || !(amd64 || arm64)

package shm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/device"
)

// Device is the shared-memory device; this platform has none.
type Device struct{}

// Open fails with [device.ErrNotSupported]: the backend needs Linux on
// amd64 or arm64.
func Open(kv device.KV, cfg Config) (*Device, error) {
	return nil, fmt.Errorf("%w: the shared-memory backend needs Linux: %w", device.ErrBootstrap, device.ErrNotSupported)
}

// Local reports false: no process shares memory with this one here.
func (d *Device) Local(proc int) bool { return false }

// Start implements [device.Device].
func (d *Device) Start(e device.Engine) error { return device.ErrNotSupported }

// Send implements [device.Device].
func (d *Device) Send(src, dst int, env device.Envelope, data []byte, done func(error)) error {
	return device.ErrNotSupported
}

// Close implements [device.Device].
func (d *Device) Close() error { return nil }
