package devicetest

import (
	"fmt"
	"sync"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
)

// RunTimeout bounds [Run] and [Play]: a job still running after it is
// reported as a hang (a panic with the errors seen so far), never waited
// for.
var RunTimeout = 120 * time.Second

// Process is one process of a job as [Play] runs it: its world, the world
// ranks it runs, and how it leaves the job (closing its device, then its
// world). A launcher's job (mpgo's internal job.Job) is one.
type Process interface {
	World() *comm.World
	Ranks() []int
	Close() error
}

// Run runs fn on every rank of a job whose processes are played by worlds
// of this process, process p a world of layout.Ranks ranks running those
// that layout.Owner gives p, joined to the others by devs[p], as [Play]
// runs them. It returns each rank's error, or an error making the worlds.
func Run(devs []device.Device, layout device.Layout, eagerLimit int, fn func(w *comm.Comm) error) ([]error, error) {
	procs := make([]Process, len(devs))
	ranks := make([][]int, len(devs))
	for r := range layout.Ranks {
		p := layout.Owner(r)
		ranks[p] = append(ranks[p], r)
	}
	for p, d := range devs {
		w, err := comm.NewWorld(layout.Ranks, comm.Config{EagerLimit: eagerLimit, Local: ranks[p], Device: d, Process: layout.Owner})
		if err != nil {
			for _, q := range procs[:p] {
				q.World().Abort()
				q.Close()
			}
			d.Close()
			return nil, fmt.Errorf("devicetest: process %d: %w", p, err)
		}
		procs[p] = &played{w: w, dev: d, ranks: ranks[p]}
	}
	return Play(procs, fn), nil
}

// NewProcess returns the [Process] of world w, whose local ranks are
// ranks, joined to the job by dev: Close closes dev, then w. Tests that
// make their worlds themselves (with settings Run does not give) play them
// with [Play] through it.
func NewProcess(w *comm.World, dev device.Device, ranks []int) Process {
	return &played{w: w, dev: dev, ranks: ranks}
}

// played is a process Run plays: a world and its device.
type played struct {
	w     *comm.World
	dev   device.Device
	ranks []int
}

func (p *played) World() *comm.World { return p.w }
func (p *played) Ranks() []int       { return p.ranks }
func (p *played) Close() error {
	err := p.dev.Close()
	p.w.Close()
	return err
}

// Play runs fn on every rank of procs, the processes of one job, each rank
// on a goroutine of its own, and returns each rank's error, indexed by
// world rank. A rank whose fn fails aborts its process's world; each
// process closes (Process.Close) once its own ranks returned, on its own
// schedule: abruptly after an abort, so that the others see it lost,
// gracefully otherwise. A job that runs longer than [RunTimeout] panics as
// a hang.
func Play(procs []Process, fn func(w *comm.Comm) error) []error {
	errs := make([]error, procs[0].World().Size())
	var wg sync.WaitGroup
	for _, proc := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := proc.World()
			var local sync.WaitGroup
			for _, r := range proc.Ranks() {
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
			proc.Close()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(RunTimeout):
		panic(fmt.Sprintf("devicetest: the job hangs; errors so far: %v", errs))
	}
	return errs
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
