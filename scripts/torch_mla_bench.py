#!/usr/bin/env python3
"""PyTorch's multi-head latent attention at decode on the shapes of perflab's attention:mla_decode, for a side-by-side
table.

The absorbed form DeepSeek-V3 decodes with: one new query token per sequence, `heads` query heads of 576 (512 latent
+ 64 rotary) against one latent KV head of 576 per token, the value its first 512; softmax scale 1/sqrt(192). PyTorch
has no MLA kernel (FlashMLA is a separate package, not on this machine), so the rows are what a user writes:

  paged       the latent cache in pages of 64 tokens; each step gathers every sequence's pages by its block table
              (index_select), then the scores in one batched GEMM over 576, a masked softmax in fp32 and the output
              in one batched GEMM over 512 -- eager, and under torch.compile (default and max-autotune);
  contiguous  the same over a cache already laid out [batch, kv-len, 576] (no gather): what a dense cache would
              cost, eager and compiled.

Counted as perflab counts them: FLOPs 2·heads·tokens·(576 + 512); bytes each latent row once, Q once, O once. All
sequences are --kv-len long (perflab run with --len-spread 0 gives the same shapes). Beside a device-to-device copy
of the latent bytes timed in the same process (the HBM ceiling).

Timing: perflab.bench (scripts/torch_timing.py), the harness of `perflab run` on torch's stream.

    python3 scripts/torch_mla_bench.py [--batch 64] [--heads 128] [--kv-len 8192] [--json out.json]
    perflab run --targets attention:mla_decode \\
        --target-extra-arg 'attention:mla_decode=--heads 128 --kv-len 8192 --len-spread 0'   # the same shape
"""
import argparse
import json
import math
import sys

import torch

from torch_timing import compiled, median_ms

D_QK, D_V, PAGE = 576, 512, 64


def make(batch, heads, kv_len, seed):
    """Q [batch, heads, 576], the latent pool [pages·64, 576] with every sequence's pages scattered through it, the
    block table [batch, pages a sequence] and the same cache contiguous [batch, kv_len, 576]; bf16, values in ±1."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    per_seq = (kv_len + PAGE - 1) // PAGE
    pages = batch * per_seq
    q = torch.rand(batch, heads, D_QK, device="cuda", generator=g, dtype=torch.float32).mul_(2).sub_(1).bfloat16()
    pool = torch.rand(pages * PAGE, D_QK, device="cuda", generator=g, dtype=torch.float32).mul_(2).sub_(1).bfloat16()
    order = torch.randperm(pages, device="cuda", generator=g)
    table = order.view(batch, per_seq).int()
    rows = (table.long().unsqueeze(-1) * PAGE + torch.arange(PAGE, device="cuda")).view(batch, per_seq * PAGE)
    contiguous = pool.index_select(0, rows[:, :kv_len].reshape(-1)).view(batch, kv_len, D_QK).contiguous()
    return q, pool, table, contiguous


def attend(q, kv, kv_len, scale):
    """out [batch, heads, 512] = softmax(q·kvᵀ · scale) · kv[..., :512] over the first kv_len tokens of kv."""
    kv = kv[:, :kv_len]
    s = torch.bmm(q, kv.transpose(1, 2)).float() * scale
    p = torch.softmax(s, dim=-1).to(q.dtype)
    return torch.bmm(p, kv[..., :D_V])


def paged_step(q, pool, table, kv_len, scale):
    batch, per_seq = table.shape
    rows = (table.long().unsqueeze(-1) * PAGE + torch.arange(PAGE, device=q.device)).view(batch, per_seq * PAGE)
    kv = pool.index_select(0, rows.reshape(-1)).view(batch, per_seq * PAGE, D_QK)
    return attend(q, kv, kv_len, scale)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--heads", type=int, default=128)
    ap.add_argument("--kv-len", type=int, default=8192)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true", help="eager rows only")
    ap.add_argument("--json", help="write the rows here too")
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("torch_mla_bench.py: no CUDA device", file=sys.stderr)
        return 3
    if a.batch < 1 or a.heads < 1 or a.kv_len < 1:
        print("torch_mla_bench.py: --batch, --heads and --kv-len must be at least 1", file=sys.stderr)
        return 2
    scale = 1.0 / math.sqrt(192.0)
    q, pool, table, contiguous = make(a.batch, a.heads, a.kv_len, a.seed)
    tokens = a.batch * a.kv_len
    flops = 2.0 * a.heads * tokens * (D_QK + D_V)
    nbytes = 2.0 * tokens * D_QK + 2.0 * a.batch * a.heads * (D_QK + D_V)

    # the two forms agree (the same tokens, gathered or laid out)
    ref = attend(q.float(), contiguous.float(), a.kv_len, scale)
    for name, out in (("paged", paged_step(q, pool, table, a.kv_len, scale)),
                      ("contiguous", attend(q, contiguous, a.kv_len, scale))):
        err = ((out.float() - ref).norm() / ref.norm()).item()
        if not err < 2e-2:
            print(f"torch_mla_bench.py: the {name} form is {err:.3g} (relative L2) from the fp32 reference",
                  file=sys.stderr)
            return 1

    rows = []
    fns = [("paged eager", lambda: paged_step(q, pool, table, a.kv_len, scale)),
           ("contiguous eager", lambda: attend(q, contiguous, a.kv_len, scale))]
    if not a.no_compile:
        fns += [(f"paged {label}", fn) for label, fn in
                compiled(lambda: paged_step(q, pool, table, a.kv_len, scale), "the paged MLA step")]
        fns += [(f"contiguous {label}", fn) for label, fn in
                compiled(lambda: attend(q, contiguous, a.kv_len, scale), "the contiguous MLA step")]
    latent = pool[: tokens].clone()
    dst = torch.empty_like(latent)
    fns.append(("copy of the latent bytes (ceiling)", lambda: dst.copy_(latent)))
    print(f"MLA decode, batch {a.batch}, {a.heads} heads, {a.kv_len} tokens each, pages of {PAGE}; torch "
          f"{torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'row':<44} {'median':>11} {'TFLOP/s':>9} {'GB/s':>8}")
    for label, fn in fns:
        ms = median_ms(fn)
        copy = label.startswith("copy")
        row = {"row": label, "median_ms": ms, "tflops": None if copy else flops / ms / 1e9,
               "gbps": (2.0 * tokens * D_QK * 2 if copy else nbytes) / ms / 1e6}
        rows.append(row)
        tf = "-" if row["tflops"] is None else f"{row['tflops']:.1f}"
        print(f"{label:<44} {ms * 1e3:>8.1f} us {tf:>9} {row['gbps']:>8.0f}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"batch": a.batch, "heads": a.heads, "kv_len": a.kv_len, "page": PAGE,
                       "torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
