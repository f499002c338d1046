#!/usr/bin/env python3
"""PyTorch's version of perflab's e2e:moe_layer_decode: the same mixture-of-experts decoder layer (Qwen3-30B-A3B or
Mixtral-8x7B sizes, bf16, random weights) over the same paged KV cache, its experts two ways, eager and
torch.compile (default and, with --max-autotune, "max-autotune"), timed as scripts/torch_engine_layer.py times (its
timer, interleaved rounds and copy-rate floor are imported from it).

The layer: torch_engine_layer's attention half over a paged cache (with Qwen3's q/k RMSNorm per head before RoPE),
then RMSNorm -> router (x @ router.T, in fp32) -> top-k of the logits with their softmax (the engine's routing) ->
the experts -> the weighted sum -> + residual. The experts:
  loop:       PyTorch's loop over the experts the batch touched (Hugging Face's Qwen3-MoE/Mixtral blocks): the
              experts' ids read back to the host, one gate_up and one down matmul per expert on its gathered rows,
              index_add_ back in token order;
  grouped_mm: the tokens sorted by expert on the GPU and torch._grouped_mm for every expert's gate_up and down
              in one call each (offsets on the device, no host read).
The floor: the layer's fixed weights, the experts the batch's routing touched and the KV pages read once, at the
rate of a device-to-device copy of the same bytes timed in the same process (what perflab's floor row reads).

    python3 scripts/torch_engine_moe_layer.py [--model qwen3-30b-a3b] [--batch 64] [--len 2048] [--iters 30]
                                              [--rounds 3] [--max-autotune] [--json f]
"""
import argparse
import copy
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_engine_layer as tel  # noqa: E402

# hidden, heads, kv_heads, head_dim, experts, top_k, expert width, rope_theta, rms_eps, qk-norm
# (engine/model_config.c)
MODELS = {
    "qwen3-30b-a3b": (2048, 32, 4, 128, 128, 8, 768, 1e6, 1e-6, True),
    "mixtral-8x7b": (4096, 32, 8, 128, 8, 2, 14336, 1e6, 1e-5, False),
}


class MoELayer(tel.Layer):
    def __init__(self, model, device):  # torch_engine_layer's Layer, its dense MLP replaced by the experts
        D, H, KV, hd, E, k, I, theta, eps, qkn = MODELS[model]
        self.D, self.H, self.KV, self.hd, self.I, self.theta, self.eps = D, H, KV, hd, I, theta, eps
        self.E, self.k, self.qk_norm, self.grouped = E, k, qkn, False
        self.record = None  # a list: mlp appends each call's expert ids (eager calls before the timing only)
        g = torch.Generator(device=device).manual_seed(1)

        def lin(*shape):
            return ((torch.rand(*shape, device=device, generator=g) * 2 - 1) / shape[-1]**0.5).to(torch.bfloat16)

        def norm(n):
            return (0.5 + torch.rand(n, device=device, generator=g)).to(torch.bfloat16)

        self.attn_norm, self.mlp_norm, self.q_norm, self.k_norm = norm(D), norm(D), norm(hd), norm(hd)
        self.qkv, self.o, self.router = lin((H + 2 * KV) * hd, D), lin(D, H * hd), lin(E, D)
        self.gate_up, self.down = lin(E, 2 * I, D), lin(E, D, I)  # gate rows first, as the engine stores them
        self.inv_freq = theta ** (-torch.arange(0, hd // 2, device=device, dtype=torch.float64) / (hd // 2))

    def fixed_bytes(self):
        ts = [self.attn_norm, self.mlp_norm, self.qkv, self.o, self.router] + \
            ([self.q_norm, self.k_norm] if self.qk_norm else [])
        return sum(t.numel() * t.element_size() for t in ts)

    def expert_bytes(self):
        return (self.gate_up[0].numel() + self.down[0].numel()) * 2

    def project(self, x, pos):  # torch_engine_layer's, with the q/k RMSNorm of a qk-norm model before RoPE
        B, S = x.shape[0], x.shape[1]
        xn = F.rms_norm(x, (self.D,), self.attn_norm, self.eps)
        q, k, v = (xn @ self.qkv.T).split([self.H * self.hd, self.KV * self.hd, self.KV * self.hd], dim=-1)
        q, k = q.view(B, S, self.H, self.hd), k.view(B, S, self.KV, self.hd)
        if self.qk_norm:
            q = F.rms_norm(q, (self.hd,), self.q_norm, self.eps)
            k = F.rms_norm(k, (self.hd,), self.k_norm, self.eps)
        return self.rope(q, pos).transpose(1, 2), self.rope(k, pos).transpose(1, 2), \
            v.view(B, S, self.KV, self.hd).transpose(1, 2)

    def route(self, x):  # x [T, D] -> weights [T, k] fp32, ids [T, k]
        logits = x.float() @ self.router.float().T
        top, ids = torch.topk(logits, self.k, dim=-1)
        return torch.softmax(top, dim=-1), ids

    def experts_loop(self, x, w, ids):
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
        for e in torch.unique(ids).tolist():  # the host read of PyTorch's loop
            tok, slot = torch.where(ids == e)
            g, u = (x[tok] @ self.gate_up[e].T).chunk(2, dim=-1)
            y = (F.silu(g) * u) @ self.down[e].T
            out.index_add_(0, tok, y.float() * w[tok, slot, None])
        return out

    def experts_grouped(self, x, w, ids):
        flat = ids.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.zeros(self.E, dtype=torch.int64, device=x.device).scatter_add_(0, flat, torch.ones_like(flat))
        offs = counts.cumsum(0).to(torch.int32)
        tok = order // self.k
        gu = torch._grouped_mm(x[tok], self.gate_up.transpose(-2, -1), offs=offs)
        g, u = gu.chunk(2, dim=-1)
        y = torch._grouped_mm(F.silu(g) * u, self.down.transpose(-2, -1), offs=offs)
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
        return out.index_add_(0, tok, y.float() * w.reshape(-1)[order, None])

    def mlp(self, h):  # called by Layer.decode_paged after the attention half
        x = F.rms_norm(h, (self.D,), self.mlp_norm, self.eps).reshape(-1, self.D)
        w, ids = self.route(x)
        if self.record is not None:
            self.record.append(ids)
        out = self.experts_grouped(x, w, ids) if self.grouped else self.experts_loop(x, w, ids)
        return h + out.to(torch.bfloat16).view_as(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-30b-a3b", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--len", type=int, default=2048, help="cache length with the new token (a multiple of 16)")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-autotune", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_engine_moe_layer: no CUDA device", file=sys.stderr)
        return 3
    if a.len % tel.PAGE != 0 or a.batch < 1:
        print(f"torch_engine_moe_layer: --len must be a multiple of {tel.PAGE} and --batch >= 1", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    loop = MoELayer(a.model, dev)
    grouped = copy.copy(loop)  # the same weights
    grouped.grouped = True
    modes = ["default"] + (["max-autotune"] if a.max_autotune else [])
    B, n = a.batch, a.len
    with torch.no_grad():
        x = (torch.rand(B, 1, loop.D, device=dev) * 2 - 1).to(torch.bfloat16)
        pages = B * n // tel.PAGE
        kp = ((torch.rand(pages, tel.PAGE, loop.KV, loop.hd, device=dev) * 2 - 1)).to(torch.bfloat16)
        vp = torch.rand_like(kp) * 2 - 1
        perm = torch.randperm(pages, device=dev, generator=torch.Generator(device=dev).manual_seed(2))
        table = perm.view(B, n // tel.PAGE)
        slots = table[:, -1] * tel.PAGE + (n - 1) % tel.PAGE
        pos = torch.tensor([n - 1], device=dev)
        args = (x, kp, vp, table, slots, pos)
        # the batch's routing (for the floor: the experts it touches) and the two ways' outputs against each other
        loop.record = []
        ref, got = loop.decode_paged(*args), grouped.decode_paged(*args)
        touched = int(torch.unique(loop.record[0]).numel())
        loop.record = None
        err = ((ref.float() - got.float()).norm() / ref.float().norm()).item()
        floor_bytes = loop.fixed_bytes() + touched * loop.expert_bytes() + 2 * kp.numel() * 2
        rate = tel.copy_rate(floor_bytes, a.iters, dev)
        sides = {}
        for name, L in (("loop", loop), ("grouped_mm", grouped)):
            for k, fn in tel.sides_of(L.decode_paged, args, modes).items():
                sides[f"{name} {k}"] = fn
        res = tel.interleaved(sides, a.iters, a.rounds)
    floor_us = floor_bytes / rate * 1e6
    print(f"moe decode paged {B} x {n} ({a.model}): {touched} of {loop.E} experts touched; floor {floor_us:.1f} us "
          f"at {rate / 1e12:.2f} TB/s; loop vs grouped_mm outputs: relative L2 {err:.2e}")
    for k, v in res.items():
        print(f"  {k:30s} {v['median_ms'] * 1e3:9.1f} us  [{v['min_ms'] * 1e3:.1f}, {v['max_ms'] * 1e3:.1f}]"
              f"  {100 * floor_us / (v['median_ms'] * 1e3):.1f}% of floor")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "batch": B, "len": n, "touched": touched, "floor_us": floor_us, "copy_tbps": rate / 1e12,
                       "loop_vs_grouped_rel_l2": err, "sides": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
