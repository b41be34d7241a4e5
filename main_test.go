package mpgo_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helperMain(mode) // a process of a job a test started: it exits
		return
	}
	goleak.VerifyTestMain(m)
}
