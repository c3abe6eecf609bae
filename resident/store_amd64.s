//go:build !race

#include "textflag.h"

// func storeRel(p *uint64, v uint64)
//
// A plain store: on amd64 (TSO) every store is a release store, and a
// MOV, unlike the XCHG sync/atomic uses for Store, does not wait for the
// store buffer to drain.
TEXT ·storeRel(SB),NOSPLIT,$0-16
	MOVQ	p+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, (AX)
	RET
