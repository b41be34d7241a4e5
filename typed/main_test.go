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
	goleak.VerifyTestMain(m)
}
