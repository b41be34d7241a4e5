//go:build linux && (amd64 || arm64)

package shm

import "github.com/mpgo/mpgo/comm/device"

// ReadOnArrival returns how many rendezvous d (a *Device) read on arrival.
func ReadOnArrival(d device.Device) uint64 { return d.(*Device).onArrival.Load() }
