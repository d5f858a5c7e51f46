//go:build !purego

#include "textflag.h"

// Lane i of VPSRLVQ by shifts holds h2 >> 9i: the seven fields of h2 in
// lanes 0 to 6 once masked; lane 7 is overwritten with w1.
DATA shifts<>+0(SB)/8, $0
DATA shifts<>+8(SB)/8, $9
DATA shifts<>+16(SB)/8, $18
DATA shifts<>+24(SB)/8, $27
DATA shifts<>+32(SB)/8, $36
DATA shifts<>+40(SB)/8, $45
DATA shifts<>+48(SB)/8, $54
DATA shifts<>+56(SB)/8, $0
GLOBL shifts<>(SB), RODATA|NOPTR, $64

DATA fieldMask<>+0(SB)/8, $511
GLOBL fieldMask<>(SB), RODATA|NOPTR, $8

// SPLITMIX sets R9 to w1 = splitmix64(SI + golden), using AX.
#define SPLITMIX \
	MOVQ $0x9E3779B97F4A7C15, R9; \
	ADDQ SI, R9; \
	MOVQ R9, AX; \
	SHRQ $30, AX; \
	XORQ AX, R9; \
	MOVQ $0xBF58476D1CE4E5B9, AX; \
	IMULQ AX, R9; \
	MOVQ R9, AX; \
	SHRQ $27, AX; \
	XORQ AX, R9; \
	MOVQ $0x94D049BB133111EB, AX; \
	IMULQ AX, R9; \
	MOVQ R9, AX; \
	SHRQ $31, AX; \
	XORQ AX, R9

// REPEATS clears ZF if the candidates repeat: the seven fields of h2 (SI)
// and the first of w1 (R9) go in the eight lanes of Z1, which VPCONFLICTQ
// compares pairwise, and the second of w1 (DX >> 0, masked here; 512, which
// equals no field, when n1 = CX = 1) is compared with all eight. Uses AX.
#define REPEATS \
	VPBROADCASTQ SI, Z0; \
	VPSRLVQ shifts<>(SB), Z0, Z1; \
	MOVL $0x80, AX; \
	KMOVW AX, K1; \
	VPBROADCASTQ R9, K1, Z1; \
	VPANDQ.BCST fieldMask<>(SB), Z1, Z1; \
	VPCONFLICTQ Z1, Z2; \
	VPTESTMQ Z2, Z2, K2; \
	ANDQ $511, DX; \
	MOVL $512, AX; \
	CMPQ CX, $1; \
	CMOVQEQ AX, DX; \
	VPBROADCASTQ DX, Z3; \
	VPCMPEQQ Z3, Z1, K3; \
	KORTESTW K2, K3; \
	VZEROUPPER

// SETBIT sets bit p&511 of the block at DI and adds its former value to
// R11 (BTS leaves it in CF). Uses AX and BX.
#define SETBIT(p) \
	MOVQ p, BX; \
	SHRQ $3, BX; \
	ANDL $0x38, BX; \
	MOVQ (DI)(BX*1), AX; \
	BTSQ p, AX; \
	ADCQ $0, R11; \
	MOVQ AX, (DI)(BX*1)

// TESTBIT jumps to absent if bit p&511 of the block at DI is clear. Uses AX
// and BX.
#define TESTBIT(p) \
	MOVQ p, BX; \
	SHRQ $3, BX; \
	ANDL $0x38, BX; \
	MOVQ (DI)(BX*1), AX; \
	BTQ p, AX; \
	JCC absent

// func Add(blk *[8]uint64, h2, n1 uint64) (present, ok bool)
TEXT ·Add(SB), NOSPLIT, $0-26
	MOVQ blk+0(FP), DI
	MOVQ h2+8(FP), SI
	MOVQ n1+16(FP), CX
	SPLITMIX
	MOVQ R9, DX
	SHRQ $9, DX
	REPEATS
	JNE repeat
	// The seven fields of h2 from the lowest, then one or two of w1,
	// written out: no loop counter, no branch but the one on n1.
	XORL R11, R11
	SETBIT(SI)
	SHRQ $9, SI
	SETBIT(SI)
	SHRQ $9, SI
	SETBIT(SI)
	SHRQ $9, SI
	SETBIT(SI)
	SHRQ $9, SI
	SETBIT(SI)
	SHRQ $9, SI
	SETBIT(SI)
	SHRQ $9, SI
	SETBIT(SI)
	SETBIT(R9)
	CMPQ CX, $1
	JEQ done
	SHRQ $9, R9
	SETBIT(R9)

done:
	// Present if all 7+n1 bits were set before.
	ADDQ $7, CX
	CMPQ R11, CX
	SETEQ present+24(FP)
	MOVB $1, ok+25(FP)
	RET

repeat:
	MOVB $0, present+24(FP)
	MOVB $0, ok+25(FP)
	RET

// func Test(blk *[8]uint64, h2, n1 uint64) (present, ok bool)
TEXT ·Test(SB), NOSPLIT, $0-26
	MOVQ blk+0(FP), DI
	MOVQ h2+8(FP), SI
	MOVQ n1+16(FP), CX
	SPLITMIX
	TESTBIT(R9)
	MOVQ R9, DX
	SHRQ $9, DX
	CMPQ CX, $1
	JEQ check
	TESTBIT(DX)

check:
	REPEATS
	JNE repeat
	MOVB $1, present+24(FP)
	MOVB $1, ok+25(FP)
	RET

absent:
	MOVB $0, present+24(FP)
	MOVB $1, ok+25(FP)
	RET

repeat:
	MOVB $0, present+24(FP)
	MOVB $0, ok+25(FP)
	RET

// func hasAVX512() bool
TEXT ·hasAVX512(SB), NOSPLIT, $0-1
	// The largest standard leaf must reach 7.
	XORL AX, AX
	CPUID
	CMPL AX, $7
	JLT no
	// Leaf 1, ECX bit 27: OSXSAVE, so that XGETBV may be run.
	MOVL $1, AX
	XORL CX, CX
	CPUID
	BTL $27, CX
	JCC no
	// XCR0 bits 1, 2, 5, 6, 7: SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM state.
	XORL CX, CX
	XGETBV
	ANDL $0xE6, AX
	CMPL AX, $0xE6
	JNE no
	// Leaf 7, EBX bit 16: AVX-512F, bit 28: AVX-512CD.
	MOVL $7, AX
	XORL CX, CX
	CPUID
	ANDL $0x10010000, BX
	CMPL BX, $0x10010000
	JNE no
	MOVB $1, ret+0(FP)
	RET

no:
	MOVB $0, ret+0(FP)
	RET

// Lane i of sentinels is 512+i, which equals no 9-bit field: the lanes of
// TestFields at and above k hold them, so that only the first k fields can
// compare equal.
DATA sentinels<>+0(SB)/8, $512
DATA sentinels<>+8(SB)/8, $513
DATA sentinels<>+16(SB)/8, $514
DATA sentinels<>+24(SB)/8, $515
DATA sentinels<>+32(SB)/8, $516
DATA sentinels<>+40(SB)/8, $517
DATA sentinels<>+48(SB)/8, $518
DATA sentinels<>+56(SB)/8, $519
GLOBL sentinels<>(SB), RODATA|NOPTR, $64

DATA bitMask<>+0(SB)/8, $63
GLOBL bitMask<>(SB), RODATA|NOPTR, $8

DATA one<>+0(SB)/8, $1
GLOBL one<>(SB), RODATA|NOPTR, $8

// FIELDS sets Z6 to the first k (CX) fields of h2 (SI), in lanes 0 to
// k-1, and sentinels in the other lanes, Z1 to h2 >> 9i in lane i, and K2
// to the first k lanes. Uses AX and Z0.
#define FIELDS \
	VPBROADCASTQ SI, Z0; \
	VPSRLVQ shifts<>(SB), Z0, Z1; \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K2; \
	VMOVDQU64 sentinels<>(SB), Z6; \
	VPANDQ.BCST fieldMask<>(SB), Z1, K2, Z6

// DISTINCT clears ZF if two lanes of Z6 are equal: each lane is compared
// with the lanes 1, 2, 3 and 4 further round, which makes every pair of
// the eight. Uses Z7 and K4 to K7.
#define DISTINCT \
	VALIGNQ $1, Z6, Z6, Z7; \
	VPCMPEQQ Z6, Z7, K4; \
	VALIGNQ $2, Z6, Z6, Z7; \
	VPCMPEQQ Z6, Z7, K5; \
	VALIGNQ $3, Z6, Z6, Z7; \
	VPCMPEQQ Z6, Z7, K6; \
	VALIGNQ $4, Z6, Z6, Z7; \
	VPCMPEQQ Z6, Z7, K7; \
	KORW K4, K5, K4; \
	KORW K6, K7, K6; \
	KORTESTW K4, K6

// func TestFields(blk *[8]uint64, h2, k uint64) (present, ok bool)
TEXT ·TestFields(SB), NOSPLIT, $0-26
	MOVQ blk+0(FP), DI
	MOVQ h2+8(FP), SI
	MOVQ k+16(FP), CX
	FIELDS
	// Lane i: word h2 >> (9i+6) of the block (VPERMQ reads bits 0-2 of
	// an index) shifted right by bits 0-5 of h2 >> 9i; K1: the lanes whose
	// bit 0 is then set.
	VPSRLQ $6, Z1, Z2
	VPERMQ (DI), Z2, Z3
	VPANDQ.BCST bitMask<>(SB), Z1, Z4
	VPSRLVQ Z4, Z3, Z3
	VPTESTMQ.BCST one<>(SB), Z3, K1
	// Absent if a bit of the first k lanes is clear.
	KANDNW K2, K1, K3
	KORTESTW K3, K3
	JNE absent
	DISTINCT
	VZEROUPPER
	JNE repeat
	MOVB $1, present+24(FP)
	MOVB $1, ok+25(FP)
	RET

absent:
	VZEROUPPER
	MOVB $0, present+24(FP)
	MOVB $1, ok+25(FP)
	RET

repeat:
	MOVB $0, present+24(FP)
	MOVB $0, ok+25(FP)
	RET

// func AddFields(blk *[8]uint64, h2, k uint64) (present, ok bool)
TEXT ·AddFields(SB), NOSPLIT, $0-26
	MOVQ blk+0(FP), DI
	MOVQ h2+8(FP), SI
	MOVQ k+16(FP), CX
	FIELDS
	DISTINCT
	VZEROUPPER
	JNE addRepeat
	// The k fields from the lowest, each bit set with BTS and its former
	// value (CF) added to R11.
	XORL R11, R11
	MOVQ CX, R8
addLoop:
	MOVQ SI, BX
	SHRQ $3, BX
	ANDL $0x38, BX
	MOVQ (DI)(BX*1), AX
	BTSQ SI, AX
	ADCQ $0, R11
	MOVQ AX, (DI)(BX*1)
	SHRQ $9, SI
	DECQ R8
	JNE addLoop
	CMPQ R11, CX
	SETEQ present+24(FP)
	MOVB $1, ok+25(FP)
	RET

addRepeat:
	MOVB $0, present+24(FP)
	MOVB $0, ok+25(FP)
	RET

// func TestAll(blk *[8]uint64, h2, n1 uint64) (present, ok bool)
TEXT ·TestAll(SB), NOSPLIT, $0-26
	MOVQ blk+0(FP), DI
	MOVQ h2+8(FP), SI
	MOVQ n1+16(FP), CX
	SPLITMIX
	MOVQ R9, DX
	SHRQ $9, DX
	// The seven fields of h2 and the first of w1 in the eight lanes of Z1,
	// as REPEATS puts them; K3: the lanes whose bit is set in the block
	// (VPERMQ reads bits 0-2 of the word index h2 >> (9i+6)).
	VPBROADCASTQ SI, Z0
	VPSRLVQ shifts<>(SB), Z0, Z1
	MOVL $0x80, AX
	KMOVW AX, K1
	VPBROADCASTQ R9, K1, Z1
	VPANDQ.BCST fieldMask<>(SB), Z1, Z1
	VPSRLQ $6, Z1, Z2
	VPERMQ (DI), Z2, Z3
	VPANDQ.BCST bitMask<>(SB), Z1, Z4
	VPSRLVQ Z4, Z3, Z3
	VPTESTMQ.BCST one<>(SB), Z3, K3
	// Absent unless all eight are set (KORTESTB sets CF when they are).
	KORTESTB K3, K3
	JCC allAbsent
	CMPQ CX, $1
	JEQ allCheck
	// The second field of w1 (n1 = 2). TESTBIT jumps to absent, not to
	// allAbsent: VZEROUPPER first.
	MOVQ DX, BX
	SHRQ $3, BX
	ANDL $0x38, BX
	MOVQ (DI)(BX*1), AX
	BTQ DX, AX
	JCC allAbsent

allCheck:
	REPEATS
	JNE allRepeat
	MOVB $1, present+24(FP)
	MOVB $1, ok+25(FP)
	RET

allAbsent:
	VZEROUPPER
	MOVB $0, present+24(FP)
	MOVB $1, ok+25(FP)
	RET

allRepeat:
	MOVB $0, present+24(FP)
	MOVB $0, ok+25(FP)
	RET
