//go:build !purego

#include "textflag.h"

// func words(base *uint64, idx []uint64) uint64
TEXT ·words(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), AX
	MOVQ idx_base+8(FP), SI
	MOVQ idx_len+16(FP), CX
	TESTQ CX, CX
	JZ   done

loop:
	MOVQ       (SI), DX
	PREFETCHT0 (AX)(DX*8)
	ADDQ       $8, SI
	DECQ       CX
	JNZ        loop

done:
	MOVQ $0, ret+32(FP)
	RET

// func pointers(ps []*uint64) uint64
TEXT ·pointers(SB), NOSPLIT, $0-32
	MOVQ ps_base+0(FP), SI
	MOVQ ps_len+8(FP), CX
	TESTQ CX, CX
	JZ   pdone

ploop:
	MOVQ       (SI), DX
	PREFETCHT0 (DX)
	ADDQ       $8, SI
	DECQ       CX
	JNZ        ploop

pdone:
	MOVQ $0, ret+24(FP)
	RET
