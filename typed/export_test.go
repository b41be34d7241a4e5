package typed

// Transfer exposes transfer, the one-pass move between two layouts, to the
// tests.
func Transfer[T Number](dst []T, dl Layout, src []T, sl Layout, n int) {
	transfer(dst, &dl, src, &sl, n)
}

// WindowPathEnv is the environment variable that forces windows across
// processes onto the handlers.
const WindowPathEnv = windowPathEnv

// WindowPath names the path w's operations take: "local" (every rank in
// this process), "am" (the handlers), "fabric" (the device's writes and
// reads; accumulates on the handlers) or "fabric+atomics".
func WindowPath[T any](w *Window[T]) string {
	switch {
	case w.rm == nil:
		return "local"
	case w.rm.fab == nil:
		return "am"
	case w.rm.fab.atomics:
		return "fabric+atomics"
	}
	return "fabric"
}

// WindowServed is how many data requests (put, get, accumulate,
// compare-and-swap) w's handlers ran on this rank.
func WindowServed[T any](w *Window[T]) int64 {
	if w.rm == nil {
		return 0
	}
	return w.rm.served.Load()
}
