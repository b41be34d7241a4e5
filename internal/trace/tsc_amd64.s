#include "textflag.h"

// JOIN_EDX_EAX puts into AX the 64-bit counter that RDTSC and RDTSCP
// leave in EDX:EAX.
#define JOIN_EDX_EAX \
	SHLQ $32, DX \
	ORQ  DX, AX

// func rdtsc() int64
TEXT ·rdtsc(SB), NOSPLIT, $0-8
	RDTSC
	JOIN_EDX_EAX
	MOVQ AX, ret+0(FP)
	RET

// func rdtscp() int64
TEXT ·rdtscp(SB), NOSPLIT, $0-8
	RDTSCP
	JOIN_EDX_EAX
	MOVQ AX, ret+0(FP)
	RET

// func lfenceRdtsc() int64
TEXT ·lfenceRdtsc(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	JOIN_EDX_EAX
	MOVQ AX, ret+0(FP)
	RET

// func cpuid(leaf uint32) (eax, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-16
	MOVL leaf+0(FP), AX
	XORL CX, CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL DX, edx+12(FP)
	RET
