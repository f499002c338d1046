/* ldmatrix: four 8×8 b16 matrices from shared memory to registers, lane l giving the address of row l%8 of matrix
 * l/8 and receiving, in register i, elements (l/4, 2·(l%4)) and (l/4, 2·(l%4) + 1) of matrix i: the fragment
 * layout of the mma.sync and wgmma accumulators and operands (sm_75+). */
#ifndef PERFLAB_COMMON_LDMATRIX_CUH
#define PERFLAB_COMMON_LDMATRIX_CUH

#include <stdint.h>

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* The same, each matrix transposed on the way (an N-major operand read as K-major fragments). */
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

#endif
