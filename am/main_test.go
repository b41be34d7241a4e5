package am_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(benchEnv); spec != "" { // a process of BenchmarkRoundTripTCP's job
		os.Exit(benchChild(spec))
	}
	goleak.VerifyTestMain(m)
}
