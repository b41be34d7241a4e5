package shm

import "github.com/mpgo/mpgo/comm/device"

// DefaultEagerLimit is the protocol switch between the processes of a
// host unless one is configured: shorter messages are copied through the
// rings (two copies, no round trip), longer ones read by the receiver
// from the sender's memory (one copy, after a round trip through the
// rings and a process_vm_readv, which pins the sender's pages: about
// 8 GB/s here against 40 for copy, so that below some hundred kilobytes
// the two copies win).
const DefaultEagerLimit = 128 << 10

// DefaultRingSize is the bytes of each ring (one per ordered pair of
// processes of a host): room for a few messages of the eager limit (a
// record is at most half a ring), so that a window of them is in flight
// at once. Memory is committed as the ring is used: at most 512 KiB per
// pair, 7.5 MiB a process of 16 on a host.
const DefaultRingSize = 512 << 10

// minRingSize is the smallest ring size Open takes.
const minRingSize = 4 << 10

// Config configures [Open].
type Config struct {
	// Layout says which process runs each world rank (required).
	Layout device.Layout
	// EagerLimit is the protocol switch between processes of the host;
	// zero means DefaultEagerLimit. It is lowered to what a ring carries.
	EagerLimit int
	// RingSize is the bytes of each ring, a power of two of at least
	// 4 KiB; zero means DefaultRingSize. The job runs with process 0's.
	RingSize int
	// NoCMA makes large messages go through the rings in chunks, as they
	// do where the kernel forbids reading another process's memory
	// (process_vm_readv failing with EPERM: Yama's ptrace_scope, a
	// container's seccomp profile), instead of being read by the receiver
	// straight from the sender's buffer. MPGO_SHM_CMA=0 sets it too.
	NoCMA bool
	// Host names this process's host: processes with the same name share
	// memory. Empty means pmi.HostID (a digest of the host name and boot
	// id). Tests set it to play several hosts.
	Host string
	// Getenv reads the environment (nil: os.Getenv): MPGO_SHM_CMA.
	Getenv func(string) string
}
