package engine

import (
	"runtime"
	"testing"
)

// The rule of the detector across processes, on plain states: two waves
// that agree, with every process passive and as many messages arrived as
// were sent; any difference, any active process, a message in flight or a
// process missing from a wave is no deadlock.
func TestQuiescent(t *testing.T) {
	idle := func(parks, sent, arrived uint64) procState {
		return procState{passive: true, parks: parks, sent: sent, arrived: arrived}
	}
	wave := func(s ...procState) map[int]procState {
		m := map[int]procState{}
		for p, st := range s {
			m[p] = st
		}
		return m
	}
	busy := idle(1, 0, 0)
	busy.passive = false
	for _, tt := range []struct {
		name string
		a, b map[int]procState
		want bool
	}{
		{"deadlocked", wave(idle(3, 2, 1), idle(4, 1, 2)), wave(idle(3, 2, 1), idle(4, 1, 2)), true},
		{"woken between", wave(idle(3, 2, 1), idle(4, 1, 2)), wave(idle(3, 2, 1), idle(5, 1, 2)), false},
		{"in flight", wave(idle(3, 2, 1), idle(4, 1, 1)), wave(idle(3, 2, 1), idle(4, 1, 1)), false},
		{"arrived between", wave(idle(3, 2, 1), idle(4, 1, 1)), wave(idle(3, 2, 1), idle(4, 1, 2)), false},
		{"one running", wave(idle(3, 0, 0), busy), wave(idle(3, 0, 0), busy), false},
		{"one missing", wave(idle(3, 0, 0), idle(1, 0, 0)), wave(idle(3, 0, 0)), false},
		{"one more", wave(idle(3, 0, 0)), wave(idle(3, 0, 0), idle(1, 0, 0)), false},
	} {
		if got := quiescent(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: quiescent = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A report names the caller's call and line: mpgo's own frames are the
// library's, a test file's are the user's, and so are the examples'.
func TestInLibrary(t *testing.T) {
	pc, file, _, _ := runtime.Caller(0)
	self := runtime.Frame{Function: runtime.FuncForPC(pc).Name(), File: file}
	for _, tt := range []struct {
		f    runtime.Frame
		want bool
	}{
		{runtime.Frame{Function: modulePrefix + "/comm.(*Comm).Recv", File: "/src/comm/p2p.go"}, true},
		{runtime.Frame{Function: modulePrefix + "/typed.(*Comm[...]).Allreduce", File: "/src/typed/coll.go"}, true},
		{runtime.Frame{Function: modulePrefix + ".runRanks.func3", File: "/src/comm_shm.go"}, true},
		{runtime.Frame{Function: modulePrefix + "_test.TestX.func1", File: "/src/x_test.go"}, false},
		{runtime.Frame{Function: modulePrefix + "/examples/ring.main", File: "/src/examples/ring/main.go"}, false},
		{runtime.Frame{Function: modulePrefix + "/cmd/mpcheck.main", File: "/src/cmd/mpcheck/main.go"}, false},
		{runtime.Frame{Function: "main.main", File: "/home/u/prog/main.go"}, false},
		{self, false}, // a test of the engine itself is user code to the report
	} {
		if got := inLibrary(&tt.f); got != tt.want {
			t.Errorf("inLibrary(%s in %s) = %v, want %v", tt.f.Function, tt.f.File, got, tt.want)
		}
	}
	if got := methodName(modulePrefix + "/typed.(*Comm[...]).Allreduce"); got != "Allreduce" {
		t.Errorf("methodName = %q, want Allreduce", got)
	}
}
