package mpgo

import "github.com/mpgo/mpgo/internal/job"

// JoinEnv joins a job over TCP as Join does, reading the launcher's
// environment through getenv (tests play each process with goroutines).
func JoinEnv(getenv func(string) string) (*job.Job, error) {
	open, err := opener("tcp", &config{}, getenv)
	if err != nil {
		return nil, err
	}
	return bootstrap(getenv, job.Config{}, open)
}

// TracePath is the trace file of a process (tracePath).
var TracePath = tracePath
