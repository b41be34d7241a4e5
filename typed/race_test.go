//go:build race

package typed_test

const raceEnabled = true
