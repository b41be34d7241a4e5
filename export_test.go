package mpgo

import (
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/internal/job"
)

// JoinEnv joins a job over TCP as Join does, reading the launcher's
// environment through getenv (tests play each process with goroutines).
func JoinEnv(getenv func(string) string) (*job.Job, error) {
	open, err := opener("tcp", &config{}, getenv)
	if err != nil {
		return nil, err
	}
	return bootstrap(getenv, job.Config{}, open)
}

// MainRanks is the number of goroutine ranks Main runs, started plainly
// with opts, in the environment getenv reads.
func MainRanks(getenv func(string) string, opts ...Option) (int, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return 0, err
	}
	return np(cfg, getenv)
}

// RanksIgnored is the warning of a launched process 0 whose program asked
// WithRanks(ranks) (0: did not ask) of a world of size ranks.
var RanksIgnored = ranksIgnored

// TracePath is the trace file of a process (tracePath).
var TracePath = tracePath

// RunJob runs fn on j's ranks as Join does once joined (the deadlock
// detector across processes, the failure notes).
func RunJob(j *job.Job, fn func(world *comm.Comm) error) error {
	cfg, err := newConfig(nil)
	if err != nil {
		return err
	}
	return runJob(j, fn, cfg)
}

// OpenTCP is the TCP backend's opener, as Join uses it.
func OpenTCP() job.Opener {
	open, _ := opener("tcp", &config{}, func(string) string { return "" })
	return open
}
