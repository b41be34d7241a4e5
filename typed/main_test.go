package typed_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(overlapEnv); spec != "" { // a process of BenchmarkOverlap's job
		os.Exit(overlapChild(spec))
	}
	if os.Getenv(windowJobEnv) != "" { // a process of TestWindowUnderMPIExec's job
		os.Exit(windowJobMain())
	}
	if dir := os.Getenv(killedJobEnv); dir != "" { // a process of TestWindowSharedKilled's job
		os.Exit(killedJobMain(dir))
	}
	goleak.VerifyTestMain(m)
}
