package trace

// rdtsc reads the processor's time-stamp counter (tsc_amd64.s).
func rdtsc() int64

// rdtscp reads the time-stamp counter once every earlier instruction
// has executed (RDTSCP waits for them, not for later ones); lfenceRdtsc
// once every earlier instruction has completed and before any later one
// starts (LFENCE serialises both ways). Neither is Clock's: they are the
// serialising reads BenchmarkClockSource weighs against a plain RDTSC.
func rdtscp() int64
func lfenceRdtsc() int64

// cpuid returns EAX and EDX of CPUID's leaf (tsc_amd64.s).
func cpuid(leaf uint32) (eax, edx uint32)

// tickIsTSC: the time-stamp counter ticks at a constant rate whatever
// the core's frequency and sleep states (CPUID 0x80000007, EDX bit 8:
// invariant TSC), so it is a clock, the same on every core.
var tickIsTSC = invariantTSC()

func invariantTSC() bool {
	if max, _ := cpuid(0x80000000); max < 0x80000007 {
		return false
	}
	_, edx := cpuid(0x80000007)
	return edx&(1<<8) != 0
}

// ticks reads the clock of Clock.
func ticks() int64 {
	if tickIsTSC {
		return rdtsc()
	}
	return nanotime()
}
