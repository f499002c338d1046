#!/usr/bin/env python3
"""PyTorch's version of perflab's e2e:layer_decode and e2e:layer_prefill: the same dense decoder layer (a model
config's sizes, bf16, random weights), eager and torch.compile (default and, with --max-autotune, mode
"max-autotune"), timed the way perflab times, for the side-by-side table in docs/perf/engine.md.

The layer: RMSNorm (F.rms_norm) -> QKV projection -> RoPE (rotate-half, the engine's convention) -> the new K/V
written into the cache -> attention (F.scaled_dot_product_attention with enable_gqa; decode over a contiguous
[batch, kv_heads, len, head_dim] cache, and over a paged cache whose pages are gathered by the block
table first, as PyTorch code without a paged-attention kernel does; prefill causal per prompt, prompts of one
length batched) -> O projection + residual -> RMSNorm -> gate/up projection -> SiLU(gate) * up -> down projection
+ residual.

Timing: perflab.bench (scripts/torch_timing.py: the harness of `perflab run` on torch's current stream, the stream
held by its latch until the host has enqueued the call, so the events time the GPU's work, not Python's; warm-up;
throttled samples discarded), the median of --iters samples; the sides interleaved
(eager, compiled, eager, compiled, ...) in --rounds rounds, the median of the rounds' medians reported with their
spread, so that a GPU power-state drift lands on both sides alike. The floor: the layer's weights and the KV cache
read once, at the rate of a device-to-device copy of the same bytes timed in the same process.

    python3 scripts/torch_engine_layer.py [--model llama3-8b] [--iters 30] [--rounds 3] [--max-autotune] [--json f]
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing  # noqa: E402  (perflab.bench, found through the repository)

MODELS = {  # hidden, heads, kv_heads, head_dim, intermediate, rope_theta, rms_eps (engine/model_config.c)
    "llama3-8b": (4096, 32, 8, 128, 14336, 500000.0, 1e-5),
    "llama3-70b": (8192, 64, 8, 128, 28672, 500000.0, 1e-5),
}
DECODE = [(64, 2048), (8, 8192)]  # (batch, cache length with the new token)
PREFILL = [(1, 4096), (8, 512)]  # (prompts, prompt length)
PAGE = 16  # tokens a KV page holds (perflab's e2e:layer_decode default)


def time_ms(fn, iters):
    """perflab.bench's median of fn() over iters samples."""
    return torch_timing.median_ms(fn, iterations=iters)


class Layer:
    def __init__(self, model, device):
        D, H, KV, hd, I, theta, eps = MODELS[model]
        self.D, self.H, self.KV, self.hd, self.I, self.theta, self.eps = D, H, KV, hd, I, theta, eps
        g = torch.Generator(device=device).manual_seed(1)

        def lin(n, k):
            return ((torch.rand(n, k, device=device, generator=g) * 2 - 1) / k**0.5).to(torch.bfloat16)

        self.attn_norm = (0.5 + torch.rand(D, device=device, generator=g)).to(torch.bfloat16)
        self.mlp_norm = (0.5 + torch.rand(D, device=device, generator=g)).to(torch.bfloat16)
        self.qkv = lin((H + 2 * KV) * hd, D)
        self.o, self.gate_up, self.down = lin(D, H * hd), lin(2 * I, D), lin(D, I)
        self.inv_freq = theta ** (-torch.arange(0, hd // 2, device=device, dtype=torch.float64) / (hd // 2))

    def weight_bytes(self):
        return sum(t.numel() * t.element_size() for t in (self.attn_norm, self.mlp_norm, self.qkv, self.o,
                                                           self.gate_up, self.down))

    def rope(self, x, pos):  # x [..., seq, heads, hd]; pos [seq] int
        ang = (pos.to(torch.float64)[:, None] * self.inv_freq[None, :]).float()
        c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
        x1, x2 = x[..., : self.hd // 2].float(), x[..., self.hd // 2:].float()
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).to(torch.bfloat16)

    def mlp(self, h):
        hn = F.rms_norm(h, (self.D,), self.mlp_norm, self.eps)
        g, u = (hn @ self.gate_up.T).chunk(2, dim=-1)
        return h + (F.silu(g) * u) @ self.down.T

    def project(self, x, pos):  # x [B, S, D] -> q [B, H, S, hd], k, v [B, KV, S, hd]
        B, S = x.shape[0], x.shape[1]
        xn = F.rms_norm(x, (self.D,), self.attn_norm, self.eps)
        q, k, v = (xn @ self.qkv.T).split([self.H * self.hd, self.KV * self.hd, self.KV * self.hd], dim=-1)
        q = self.rope(q.view(B, S, self.H, self.hd), pos).transpose(1, 2)
        k = self.rope(k.view(B, S, self.KV, self.hd), pos).transpose(1, 2)
        return q, k, v.view(B, S, self.KV, self.hd).transpose(1, 2)

    def decode(self, x, k_cache, v_cache, pos):  # x [B, 1, D]; caches [B, KV, L, hd]; the new token at pos
        q, k, v = self.project(x, pos)
        k_cache[:, :, pos] = k
        v_cache[:, :, pos] = v
        a = F.scaled_dot_product_attention(q, k_cache, v_cache, enable_gqa=True)
        h = x + a.transpose(1, 2).reshape(x.shape[0], 1, -1) @ self.o.T
        return self.mlp(h)

    def decode_paged(self, x, k_pool, v_pool, table, slots, pos):
        """The same step over a paged cache, the way PyTorch code without a paged-attention kernel runs one: the new
        K/V written at their slots of [pages, page, kv_heads, hd] pools, each sequence's pages gathered by its block
        table into a contiguous cache, then SDPA."""
        B = x.shape[0]
        q, k, v = self.project(x, pos)
        k_pool.view(-1, self.KV, self.hd)[slots] = k[:, :, 0]
        v_pool.view(-1, self.KV, self.hd)[slots] = v[:, :, 0]
        kc = k_pool[table].reshape(B, -1, self.KV, self.hd).transpose(1, 2)
        vc = v_pool[table].reshape(B, -1, self.KV, self.hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
        h = x + a.transpose(1, 2).reshape(B, 1, -1) @ self.o.T
        return self.mlp(h)

    def prefill(self, x, pos):  # x [P, S, D]
        q, k, v = self.project(x, pos)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        h = x + a.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1) @ self.o.T
        return self.mlp(h)


def copy_rate(nbytes, iters, device):
    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device=device)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), iters)
    return 2 * src.numel() * 2 / (ms * 1e-3)  # bytes read + written per second


def interleaved(sides, iters, rounds):
    for fn in sides.values():  # warm-up (and compilation) outside the timed rounds
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    per = {k: [] for k in sides}
    for _ in range(rounds):
        for k, fn in sides.items():
            per[k].append(time_ms(fn, iters))
    return {k: {"median_ms": statistics.median(v), "min_ms": min(v), "max_ms": max(v)} for k, v in per.items()}


def sides_of(fn, args, modes):
    out = {"eager": lambda: fn(*args)}
    for mode in modes:
        c = torch.compile(fn, mode=None if mode == "default" else mode, dynamic=False)
        out["compile " + mode] = lambda c=c: c(*args)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama3-8b", choices=sorted(MODELS))
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-autotune", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_engine_layer: no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    L = Layer(a.model, dev)
    modes = ["default"] + (["max-autotune"] if a.max_autotune else [])
    rows = []
    with torch.no_grad():
        for B, n in DECODE:
            x = torch.rand(B, 1, L.D, device=dev).to(torch.bfloat16) * 2 - 1
            kc = (torch.rand(B, L.KV, n, L.hd, device=dev) * 2 - 1).to(torch.bfloat16)
            vc = torch.rand_like(kc) * 2 - 1
            pos = torch.tensor([n - 1], device=dev)
            floor_bytes = L.weight_bytes() + 2 * kc.numel() * 2
            rate = copy_rate(floor_bytes, a.iters, dev)
            res = interleaved(sides_of(L.decode, (x, kc, vc, pos), modes), a.iters, a.rounds)
            rows.append({"step": "decode", "batch": B, "len": n, "floor_us": floor_bytes / rate * 1e6,
                         "copy_tbps": rate / 1e12, "sides": res})
            # paged: pages of PAGE tokens scattered through the pool (a seeded permutation), as perflab's target
            pages = B * n // PAGE
            kp = kc.transpose(1, 2).reshape(pages, PAGE, L.KV, L.hd).clone()
            vp = vc.transpose(1, 2).reshape(pages, PAGE, L.KV, L.hd).clone()
            perm = torch.randperm(pages, device=dev, generator=torch.Generator(device=dev).manual_seed(2))
            table = perm.view(B, n // PAGE)
            slots = table[:, -1] * PAGE + (n - 1) % PAGE
            res = interleaved(sides_of(L.decode_paged, (x, kp, vp, table, slots, pos), modes), a.iters, a.rounds)
            rows.append({"step": "decode paged", "batch": B, "len": n, "floor_us": floor_bytes / rate * 1e6,
                         "copy_tbps": rate / 1e12, "sides": res})
            del kp, vp, kc, vc
        for P, S in PREFILL:
            x = (torch.rand(P, S, L.D, device=dev) * 2 - 1).to(torch.bfloat16)
            pos = torch.arange(S, device=dev)
            flops = 2 * P * S * (L.qkv.numel() + L.o.numel() + L.gate_up.numel() + L.down.numel()) + \
                4 * P * L.H * L.hd * S * (S + 1) / 2
            res = interleaved(sides_of(L.prefill, (x, pos), modes), a.iters, a.rounds)
            for v in res.values():
                v["tflops"] = flops / (v["median_ms"] * 1e-3) / 1e12
            rows.append({"step": "prefill", "batch": P, "len": S, "flops": flops, "sides": res})
    for r in rows:
        extra = f"floor {r['floor_us']:.1f} us at {r['copy_tbps']:.2f} TB/s" if "floor_us" in r else ""
        print(f"{r['step']} {r['batch']} x {r['len']} ({a.model}) {extra}")
        for k, v in r["sides"].items():
            tf = f"  {v['tflops']:.0f} TFLOP/s" if "tflops" in v else \
                f"  {100 * r['floor_us'] / (v['median_ms'] * 1e3):.1f}% of floor"
            print(f"  {k:22s} {v['median_ms'] * 1e3:9.1f} us  [{v['min_ms'] * 1e3:.1f}, {v['max_ms'] * 1e3:.1f}]{tf}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
