//go:build linux && (amd64 || arm64)

package shm

import (
	"runtime"
	"testing"
)

// This process's affinity mask, read by the system call, counts the CPUs
// the Go runtime counted from the same call at start-up.
func TestAffinity(t *testing.T) {
	if got, want := func() int { m := affinity(); return m.count() }(), runtime.NumCPU(); got != want {
		t.Fatalf("affinity() has %d CPUs, runtime.NumCPU() %d", got, want)
	}
}

// The host's cores are the union of its processes' masks, as each wrote
// its own in its segment: processes bound to a core each (one CPU apiece)
// count as many cores as processes; processes confined to the same CPUs
// count those once; CPUs past the first word count too.
func TestCores(t *testing.T) {
	seg := func(cpus ...int) segment {
		var m cpuMask
		for _, c := range cpus {
			m[c/64] |= 1 << (c % 64)
		}
		s := segment{mem: make([]byte, ctlSize)}
		s.setCPUs(m)
		if got := s.cpus(); got != m {
			t.Fatalf("segment's mask %x, wrote %x", got, m)
		}
		return s
	}
	cases := []struct {
		name  string
		self  []int
		peers [][]int
		want  int
	}{
		{"bound to a core each", []int{0}, [][]int{{1}, {2}, {3}}, 4},
		{"all on one core", []int{0}, [][]int{{0}, {0}}, 1},
		{"unbound", []int{0, 1}, [][]int{{0, 1}}, 2},
		{"overlapping", []int{0, 1}, [][]int{{1, 2}, {2, 3}}, 4},
		{"past 64 CPUs", []int{63}, [][]int{{64}, {1023}}, 3},
		{"empty masks", nil, [][]int{nil}, 1},
	}
	for _, c := range cases {
		d := &Device{seg: seg(c.self...)}
		for _, p := range c.peers {
			d.peers = append(d.peers, &peer{seg: seg(p...)})
		}
		if got := d.cores(); got != c.want {
			t.Errorf("%s: %d cores, want %d", c.name, got, c.want)
		}
	}
}
