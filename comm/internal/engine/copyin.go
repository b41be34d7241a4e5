package engine

import "github.com/mpgo/mpgo/comm/internal/memcopy"

// How a local message's payload is copied into its receive (take).
//
// One goroutine copying a large message leaves the other core idle: its
// partner only waits for the completion. From ShareLimit to
// memcopy.CachedLimit, the copy is a memcopy.Shared: the matching
// goroutine (the sender that found the posted receive, or the receiver
// that found the queued rendezvous) copies pieces while a helper goroutine, which the scheduler runs on the
// idle core (the partner's), claims the others. take completes the sender
// and the receive only once Shared.Run has returned, so each completion
// still happens after every byte was written and every byte of the
// sender's buffer was read: the helper's accesses are ordered before
// Run's return by the atomic count of pieces done (memcopy/shared.go).
//
// A helper is started only while the world has no more ranks than Ps
// (World.yields > 0): with more ranks every P has a rank to run, and a
// helper would wait in a run queue and find nothing left to copy.
// Helpers are counted in World.copiers, which Close waits for, so that no
// goroutine of a world outlives it.

// ShareLimit is the smallest payload whose copy two goroutines share; the
// largest is memcopy.CachedLimit. Below 1 MiB the copier's 2 MiB L2 holds
// both buffers, and a helper on the other core only pulls their lines
// across (osu_bw 512 KiB 60.6 -> 39.6 GB/s when shared); above
// CachedLimit the copy streams to memory, which two cores do no faster
// (osu_latency 8 MiB 277 -> 294 µs, 16 MiB 725 -> 802). In between the
// helper, which starts some microseconds after the go statement (the
// runtime puts it in its spawner's runnext, from which an idle P steals
// it only after a pause), pays: osu_latency 1 MiB 26.8 -> 21.1 µs, 2 MiB
// 45.2 -> 39.6, osu_bw 1-4 MiB +10 to +15% (cmd/mpbench, 6 alternated
// runs against copies by one goroutine).
const ShareLimit = 1 << 20

// copyIn copies a local message's payload src into the receive buffer dst
// (len(dst) >= len(src)).
func (w *World) copyIn(dst, src []byte) {
	if len(src) < ShareLimit || len(src) > memcopy.CachedLimit || w.yields == 0 {
		memcopy.Copy(dst, src)
		return
	}
	s := memcopy.NewShared(dst, src)
	w.copiers.Add(1)
	go func() {
		defer w.copiers.Done()
		s.Help()
	}()
	s.Run()
}
