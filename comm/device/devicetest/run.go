package devicetest

import (
	"fmt"
	"sync"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
)

// RunTimeout bounds [Run]: a job still running after it is reported as a
// hang (Run panics with the errors seen so far), never waited for.
var RunTimeout = 120 * time.Second

// Run runs fn on every rank of a job whose processes are played by worlds
// of this process, process p a world of layout.Ranks ranks running those
// that layout.Owner gives p, joined to the others by devs[p]. A rank whose
// fn fails aborts its world; each process closes its device and then its
// world once its own ranks returned, on its own schedule. It returns each
// rank's error, or an error making the worlds.
func Run(devs []device.Device, layout device.Layout, eagerLimit int, fn func(w *comm.Comm) error) ([]error, error) {
	worlds := make([]*comm.World, len(devs))
	ranks := make([][]int, len(devs))
	for r := range layout.Ranks {
		p := layout.Owner(r)
		ranks[p] = append(ranks[p], r)
	}
	for p, d := range devs {
		w, err := comm.NewWorld(layout.Ranks, comm.Config{EagerLimit: eagerLimit, Local: ranks[p], Device: d, Process: layout.Owner})
		if err != nil {
			for q := range p {
				worlds[q].Abort()
				devs[q].Close()
				worlds[q].Close()
			}
			d.Close()
			return nil, fmt.Errorf("devicetest: process %d: %w", p, err)
		}
		worlds[p] = w
	}
	errs := make([]error, layout.Ranks)
	var wg sync.WaitGroup
	for p, w := range worlds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local sync.WaitGroup
			for _, r := range ranks[p] {
				local.Add(1)
				go func() {
					defer local.Done()
					defer w.RankDone(r)
					if err := fn(w.Comm(r)); err != nil {
						errs[r] = err
						w.Abort()
					}
				}()
			}
			local.Wait()
			devs[p].Close()
			w.Close()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(RunTimeout):
		panic(fmt.Sprintf("devicetest: the job hangs; errors so far: %v", errs))
	}
	return errs, nil
}

// Blocks is the layout of procs processes of k ranks each, process p
// running ranks p·k … p·k+k-1 (as mpgo's launchers lay jobs out).
func Blocks(procs, k int) device.Layout {
	return device.Layout{Ranks: procs * k, Owner: func(r int) int { return r / k }}
}

// Loopbacks returns NewLoopback's devices as a []device.Device for [Run].
func Loopbacks(procs int, layout device.Layout, eager int) ([]device.Device, []*Loopback) {
	ls := NewLoopback(procs, layout, eager)
	ds := make([]device.Device, len(ls))
	for i, l := range ls {
		ds[i] = l
	}
	return ds, ls
}
