package shm

import "github.com/mpgo/mpgo/comm/device"

// DefaultEagerLimit is the protocol switch between the processes of a
// host unless one is configured: shorter messages are copied through the
// rings (two copies, no round trip), longer ones read by the receiver
// straight from the sender's memory (one copy with process_vm_readv,
// after an RTS through the rings; FIN answers; beyond DefaultPipeLimit
// piped through the rings again, see there). Two copies through a
// ring move every byte as a cache line one core wrote and another reads.
// The 2-core test VM has a fast state and a slow one, for minutes at a
// time (MPICH's 4 KiB latency 0.72 against 2.5 us). Before the consumer
// cleared the stamp word of every cell it read (ring.go), the ring was
// 3-4x slower in the slow state (16 KiB 9.5 us against 4.0 read), and
// the limit was 16 KiB. Since it does (c615d56), the ring wins in both
// states up to here: likely because a line the consumer wrote goes back
// to the producer in one transfer, where one it only read had to be
// taken back from a sharer (8 KiB one way: 1.25-1.32 -> 0.77-0.81 us in
// the fast state, 4.9 -> 2.1 in the slow one, MPICH 1.30 / 4.6).
// Ping-pong one way, 5 and 3 alternated runs, fast / slow state,
// through the ring / read / MPICH 4.0.2: 16 KiB 3.9 / 4.2 / 4.4
// and 3.6-4.0 / 4.0-4.2 / 4.3-4.4 us; 32 KiB (read by default) 5.8 /
// 5.1 / 5.7 and 5.5-6.1 / 5.2-5.3 / 5.6-6.5. osu_bw at 16 KiB 9.5-17.2
// / 4.7-5.0 / 4.6-4.8 and 9.7-10.7 / 4.9 / 4.7-4.8 GB/s.
// Since the rings are populated at attach and the consumer prefetches
// what it reads, the ring carries 32 and 36 KiB 30-40% faster than the
// read in the fast state, and 32 KiB within 10% of it in the slow one,
// where both beat MPICH; so the limit is 40 KiB (sizes below it eager).
// 3 alternated runs each, ring / read / MPICH, one way: fast state 32 KiB
// 2.98-3.38 / 4.87-5.21 / 4.81-5.66 us, 36 KiB 4.11 / 5.78 / 6.04; slow
// state 32 KiB 5.73 / 5.19 / 6.23, 40 KiB 7.80 / 6.09 / 6.07, which is
// why it stops there (from 48 KiB the read is split with the sender:
// split_linux.go); osu_bw at 32 KiB 13.9-15.5 / 6.1-6.4 / 5.8-5.9 GB/s.
const DefaultEagerLimit = 40 << 10

// DefaultRingEagerLimit is DefaultEagerLimit where process_vm_readv is
// not allowed (Config.NoCMA, MPGO_SHM_CMA=0, or a read the kernel
// refused): a longer message then comes through the ring in chunks
// after a round trip, so eager copies pay up to here.
const DefaultRingEagerLimit = 128 << 10

// DefaultPipeLimit is the size above which a rendezvous comes through the
// ring in chunks even where process_vm_readv is allowed, on a host whose
// ranks do not outnumber its cores: the sender copies a chunk in while
// the receiver copies the one before out, both cores at memory speed,
// where process_vm_readv copies on one core at a third of that or less
// (the kernel maps each page of the sender's: 16 MiB read in 2.6-2.9 ms,
// a copy() of it in 0.7 ms, on the 2-core test VM). The receiver's
// engine starts such a pull (device.Starter) and the sender's poller
// writes the first chunks itself, so no goroutine is woken on the way.
// Up to here process_vm_readv wins, by reading on arrival (inlinePull):
// ping-pong one way on that VM, read / piped, 128 KiB 13-14 / 21-22 us,
// 256 KiB 22-25 / 26-30; above it piped wins: 384 KiB 44 / 32-35
// (MPICH 4.0.2 31-35), 512 KiB 53-65 / 26-41 (41-44), 1 MiB 94 / 50-73
// (84-93), 2 MiB 180 / 132 (171-178), 4 MiB 390 / 264 (364-380), 16 MiB
// 3.9-4.7 / 1.4-1.6 ms (3.4-3.8); osu_bw 1 MiB 12.5 / 19.6-20.3 GB/s
// (12.4-12.6), 16 MiB 5.1-6.0 / 15.9-17.1 (5.6-5.8). Oversubscribed,
// the two copies would take turns on a core: the receiver reads then,
// at any size.
const DefaultPipeLimit = 256 << 10 // inlinePull

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
	// zero means MPGO_SHM_EAGER if set, else DefaultEagerLimit (and
	// DefaultRingEagerLimit without process_vm_readv). It is lowered to
	// what a ring carries.
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
	// PipeLimit is the size above which a rendezvous comes through the
	// ring in chunks although process_vm_readv could read it, where the
	// host is not oversubscribed; negative means never, zero
	// MPGO_SHM_PIPE if set (bytes; 0 there: never), else
	// DefaultPipeLimit.
	PipeLimit int
	// Getenv reads the environment (nil: os.Getenv): MPGO_SHM_CMA,
	// MPGO_SHM_EAGER, MPGO_SHM_PIPE, MPGO_SHM_SPLIT.
	Getenv func(string) string
}
