package mpgo_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mpgo/mpgo"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		switch mode {
		case "nbody": // a process of TestTraceUnderMPIExec's job
			mpgo.Main(nbodyLike(3))
			return
		case "farm-recorded", "farm-perturbed": // TestRecordReplayUnderMPIExec's
			farmMain(mode)
			return
		}
		helperMain(mode) // a process of a job a test started: it exits
		return
	}
	goleak.VerifyTestMain(m)
}
