#include "textflag.h"

// func rdtscp() uint64
//
// RDTSCP reads the time-stamp counter after every earlier instruction has
// executed and every earlier load is globally visible (unlike RDTSC, which
// may execute ahead of them).
TEXT ·rdtscp(SB),NOSPLIT,$0-8
	RDTSCP
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET

// func cpuidTSC() (invariant, rdtscp bool)
TEXT ·cpuidTSC(SB),NOSPLIT,$0-2
	MOVB	$0, invariant+0(FP)
	MOVB	$0, rdtscp+1(FP)
	MOVL	$0x80000000, AX
	XORL	CX, CX
	CPUID
	CMPL	AX, $0x80000007
	JB	done
	MOVL	$0x80000001, AX
	XORL	CX, CX
	CPUID
	SHRL	$27, DX
	ANDL	$1, DX
	MOVB	DX, rdtscp+1(FP)
	MOVL	$0x80000007, AX
	XORL	CX, CX
	CPUID
	SHRL	$8, DX
	ANDL	$1, DX
	MOVB	DX, invariant+0(FP)
done:
	RET

// func lfence()
//
// No later instruction begins before every earlier one has completed
// (here: a clock read completes before the loads after it).
TEXT ·lfence(SB),NOSPLIT,$0-0
	LFENCE
	RET
