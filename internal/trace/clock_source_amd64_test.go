package trace

// The time-stamp counter's reads on amd64, beside the portable sources of
// clock_source_test.go: a plain RDTSC (Clock's), RDTSCP and LFENCE;RDTSC.
func init() {
	clockSources = append(clockSources,
		clockSource{"rdtsc", rdtsc},
		clockSource{"rdtscp", rdtscp},
		clockSource{"lfence-rdtsc", lfenceRdtsc})
}
