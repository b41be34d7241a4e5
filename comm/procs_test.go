package comm_test

import "runtime"

// setProcs sets GOMAXPROCS and returns the function that restores it.
func setProcs(n int) func() {
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}
