package mpgo_test

import (
	"errors"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// An unknown MPGO_BACKEND is an argument error, whatever the build.
func TestUnknownBackend(t *testing.T) {
	t.Setenv("MPGO_BACKEND", "carrier-pigeon")
	if err := mpgo.Join(func(*comm.Comm) error { return nil }); !errors.Is(err, comm.ErrArg) {
		t.Errorf("Join with MPGO_BACKEND=carrier-pigeon: %v, want ErrArg", err)
	}
}
