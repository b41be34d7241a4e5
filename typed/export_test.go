package typed

// Transfer exposes transfer, the one-pass move between two layouts, to the
// tests.
func Transfer[T Number](dst []T, dl Layout, src []T, sl Layout, n int) {
	transfer(dst, &dl, src, &sl, n)
}
