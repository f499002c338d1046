#!/usr/bin/env python3
"""Writes the wgmma.mma_async wrappers the sm_90a kernels issue, one header per family:
  kernels/common/sm90_wgmma_ops.cuh             bf16 A and B from shared memory (m64nNk16), the BF16 GEMMs
  kernels/gemm/device/sm90_wgmma_fp8_ops.cuh    e4m3 A and B from shared memory (m64nNk32), the FP8 GEMMs
  kernels/attention/attn_wgmma_ops.cuh          bf16 A from registers, B from shared memory (m64nNk16), attention's P·V
  kernels/gemm/device/sm90_wgmma_steps.cuh      bf16 m64nNk16 for every N in steps of 8 up to STEP_MAX, and a dispatcher
Each wrapper names every accumulator register as an asm operand (128 for n256), which is tedious and error-prone
by hand, hence this generator. Run it from the repository root after changing a WIDTHS list."""
import sys

BF16_WIDTHS = (16, 32, 64, 80, 128, 176, 192, 200, 224, 256)  # wgmma N of the m64nNk16 bf16 -> f32 instructions the kernels issue (16-64: split-K tiles; 80: attention's 80-key tiles at head_dim 256; 176: the 192×176 tile; 192: the 128×192 tile; 200: the swapped split-K 200-token tile; 224: the 128×224 tile)
E4M3_WIDTHS = (16, 32, 64, 96, 128, 176, 192)  # wgmma N of the m64nNk32 e4m3 -> f32 instructions the FP8 kernels issue (16-64: the swapped split-K tiles and their half-width edges; 96: the halves of the 128×192 tile; 176: the 128×176 tile)
RS_WIDTHS = (64, 128, 256)  # wgmma N of the register-A m64nNk16 instructions of attention: the head dimensions
STEP_MAX = 192  # every multiple of 8 up to this: the tokens of a tile with the tokens as wgmma's N (grouped_t_sm90a.cu)


def accumulators(regs):
    """The asm text naming the accumulators %0..%regs-1, and their "+f" operand list."""
    pieces = [", ".join(f"%{i}" for i in range(s, min(s + 16, regs))) for s in range(0, regs, 16)]
    text = ["                 \"{\""]
    for j, p in enumerate(pieces):
        sep = ", " if j + 1 < len(pieces) else ""
        text.append(f"                 \"{p}{sep}\"")
    outs = [", ".join(f"\"+f\"(d[{i}])" for i in range(s, min(s + 8, regs))) for s in range(0, regs, 8)]
    return text, "                 : " + (",\n                   ".join(outs))


def wrapper(n, kind):
    regs = n // 2  # f32 accumulators per thread: 64 x n / 128 threads
    lines = []
    if kind == "e4m3":
        k, types, pad = 32, "e4m3.e4m3", 50
        pred, operands, tail = regs + 2, f"%{regs}, %{regs + 1}", "p, 1, 1"
        inputs = "\"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d)"
        lines.append(f"/* D[64 x {n}] (+)= A[64 x 32] * B[32 x {n}], e4m3 A and B from shared memory through descriptors, both")
        lines.append(" * K-major (e4m3 wgmma has no transposed form). scale_d = 0 overwrites D, 1 accumulates. */")
        lines.append(f"__device__ __forceinline__ void pl_wgmma_m64n{n}k32_e4m3(float (&d)[{regs}], uint64_t desc_a, uint64_t desc_b,")
    elif kind == "bf16":
        k, types, pad = 16, "bf16.bf16", 50
        pred, operands, tail = regs + 2, f"%{regs}, %{regs + 1}", f"p, 1, 1, %{regs + 4}, %{regs + 3}"
        inputs = "\"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d), \"n\"(TRANS_B), \"n\"(TRANS_A)"
        lines.append(f"/* D[64 x {n}] (+)= A[64 x 16] * B[16 x {n}], A and B from shared memory through descriptors. scale_d = 0")
        lines.append(" * overwrites D (the first k-step of a tile), 1 accumulates. TRANS_B = 1 takes B N-major (K x N row-major),")
        lines.append(" * TRANS_A = 1 A M-major (K x M row-major). */")
        lines.append("template <int TRANS_B, int TRANS_A = 0>")
        lines.append(f"__device__ __forceinline__ void pl_wgmma_m64n{n}k16_bf16(float (&d)[{regs}], uint64_t desc_a, uint64_t desc_b,")
    else:  # rs: A from registers
        k, types, pad = 16, "bf16.bf16", 48
        pred, operands, tail = regs + 5, f"{{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}, %{regs + 4}", "p, 1, 1, 1"
        inputs = "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc_b), \"r\"(scale_d)"
        lines.append(f"/* D[64 x {n}] (+)= A[64 x 16] * B[16 x {n}]: A from registers (four bf16x2 per thread, the m16n8k16 A layout")
        lines.append(" * per warp, warp w holding rows 16w..16w+15), B N-major (K x N row-major: imm-trans-b = 1) from shared memory")
        lines.append(" * through its descriptor. scale_d = 0 overwrites D, 1 accumulates. */")
        lines.append(f"__device__ __forceinline__ void attn_wgmma_rs_m64n{n}k16(float (&d)[{regs}], const uint32_t (&a)[4], uint64_t desc_b,")
    lines.append(f"{' ' * pad}int scale_d)")
    lines.append("{")
    lines.append("    asm volatile(\"{\\n\"")
    lines.append("                 \".reg .pred p;\\n\"")
    lines.append(f"                 \"setp.ne.b32 p, %{pred}, 0;\\n\"")
    lines.append(f"                 \"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{types} \"")
    text, outs = accumulators(regs)
    lines.extend(text)
    lines.append(f"                 \"}}, {operands}, {tail};\\n\"")
    lines.append("                 \"}\\n\"")
    lines.append(outs)
    lines.append(f"                 : {inputs});")
    lines.append("}")
    return "\n".join(lines)


def write(path, guard, header, widths, kind):
    out = list(header)
    out.append(f"#ifndef {guard}")
    out.append(f"#define {guard}")
    out.append("")
    out.append("#include <stdint.h>")
    out.append("")
    for n in widths:
        out.append(wrapper(n, kind))
        out.append("")
    out.append("#endif")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {path}", file=sys.stderr)


def write_steps(path):
    """The bf16 widths 8, 16, ... STEP_MAX that sm90_wgmma_ops.cuh lacks, and pl_wgmma_bf16_n<N>, which names the
    wrapper of any of them (a kernel instantiated per width calls it)."""
    widths = range(8, STEP_MAX + 1, 8)
    out = ["/* Generated by scripts/gen_wgmma_ops.py: do not edit by hand. The bf16 wgmma.mma_async (sm_90a) widths in",
           f" * steps of 8 up to {STEP_MAX} that sm90_wgmma_ops.cuh lacks, and pl_wgmma_bf16_n<N>, the wrapper of any width in",
           " * steps of 8 up to {0} (K-major B). Include only from code compiled for sm_90a. */".format(STEP_MAX),
           "#ifndef PERFLAB_GEMM_DEVICE_SM90_WGMMA_STEPS_CUH", "#define PERFLAB_GEMM_DEVICE_SM90_WGMMA_STEPS_CUH", "",
           "#include <stdint.h>", "", "#include \"common/sm90_wgmma_ops.cuh\"", ""]
    for n in widths:
        if n not in BF16_WIDTHS:
            out.append(wrapper(n, "bf16"))
            out.append("")
    out.append("/* D[64 x N] (+)= A[64 x 16] * B[16 x N], both K-major, N a multiple of 8 up to %d. */" % STEP_MAX)
    out.append("template <int N>")
    out.append("__device__ __forceinline__ void pl_wgmma_bf16_n(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int scale_d)")
    out.append("{")
    out.append(f"    static_assert(N % 8 == 0 && N >= 8 && N <= {STEP_MAX}, \"a width in steps of 8\");")
    for i, n in enumerate(widths):
        kw = "if constexpr" if i == 0 else "else if constexpr"
        out.append(f"    {kw} (N == {n})")
        out.append(f"        pl_wgmma_m64n{n}k16_bf16<0>(d, desc_a, desc_b, scale_d);")
    out.append("}")
    out.append("")
    out.append("#endif")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {path}", file=sys.stderr)


def main():
    done = " * f32 accumulators in registers. Include only from code compiled for sm_90a. */"
    write("kernels/common/sm90_wgmma_ops.cuh", "PERFLAB_COMMON_SM90_WGMMA_OPS_CUH",
          ["/* Generated by scripts/gen_wgmma_ops.py: do not edit by hand. wgmma.mma_async (sm_90a) wrappers, bf16 inputs,",
           done], BF16_WIDTHS, "bf16")
    write("kernels/gemm/device/sm90_wgmma_fp8_ops.cuh", "PERFLAB_GEMM_DEVICE_SM90_WGMMA_FP8_OPS_CUH",
          ["/* Generated by scripts/gen_wgmma_ops.py: do not edit by hand. wgmma.mma_async (sm_90a) wrappers, e4m3",
           " * inputs, f32 accumulators in registers. Include only from code compiled for sm_90a. */"], E4M3_WIDTHS, "e4m3")
    write("kernels/attention/attn_wgmma_ops.cuh", "PERFLAB_ATTENTION_WGMMA_OPS_CUH",
          ["/* Generated by scripts/gen_wgmma_ops.py: do not edit by hand. wgmma.mma_async (sm_90a) wrappers with A in",
           " * registers, bf16 inputs, f32 accumulators. Include only from code compiled for sm_90a. */"], RS_WIDTHS, "rs")
    write_steps("kernels/gemm/device/sm90_wgmma_steps.cuh")


if __name__ == "__main__":
    main()
