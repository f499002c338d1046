#!/usr/bin/env python3
"""PyTorch's version of perflab's e2e:model_decode: a whole decoder model's decode step (Llama-3-8B's sizes: 32
layers, bf16, random weights), eager and torch.compile (default and, with --max-autotune, "max-autotune"), timed as
scripts/torch_engine_layer.py times (its layer, timer, interleaved rounds and copy-rate floor are imported from it),
for the tokens/s and J/token beside perflab's in docs/perf/engine.md.

The step: the batch's token ids -> the embedding rows -> each layer's decode over its own KV cache (torch_engine_layer's
Layer.decode over a contiguous cache, or Layer.decode_paged over a paged one whose pages are gathered by the block
table) -> the final RMSNorm -> the LM head -> argmax, the next token ids on the GPU. Each layer has its own weights and
cache (the same seed makes them equal in value, not in memory: every layer's bytes are read).

The floor: every layer's weights and cache, the final norm and the LM head read once, at the rate of a device-to-device
copy of the same bytes timed in the same process (what perflab's floor row reads). J/token: the NVML energy counter
over a side's timed samples (perflab.bench's energy, when the driver reports it) divided by the batch.

    python3 scripts/torch_engine_model.py [--model llama3-8b] [--layers 32] [--batch 64] [--len 2048]
                                          [--iters 20] [--rounds 3] [--max-autotune] [--json f]
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_engine_layer as tel  # noqa: E402  (the layer, its timer and the floor's copy rate)
from torch_timing import perflab  # noqa: E402  (the package, found through the repository)

VOCAB = 128256  # Llama-3's vocabulary (engine/model_config.c)
PAGE = tel.PAGE


class Model:
    def __init__(self, model, layers, device):
        self.layers = [tel.Layer(model, device) for _ in range(layers)]
        D, eps = self.layers[0].D, self.layers[0].eps
        self.D, self.eps = D, eps
        g = torch.Generator(device=device).manual_seed(3)
        self.embed = ((torch.rand(VOCAB, D, device=device, generator=g) * 2 - 1)).to(torch.bfloat16)
        self.final_norm = (0.5 + torch.rand(D, device=device, generator=g)).to(torch.bfloat16)
        self.lm_head = ((torch.rand(VOCAB, D, device=device, generator=g) * 2 - 1) / D**0.5).to(torch.bfloat16)

    def weight_bytes(self):
        """What a step reads of the weights: every layer's, the final norm and the LM head (the embedding's rows
        of the batch are negligible)."""
        return sum(L.weight_bytes() for L in self.layers) + 2 * (self.final_norm.numel() + self.lm_head.numel())

    def head(self, h):
        hn = F.rms_norm(h[:, 0], (self.D,), self.final_norm, self.eps)
        return torch.argmax(hn @ self.lm_head.T, dim=-1)

    def decode(self, ids, caches, pos):
        h = self.embed[ids].unsqueeze(1)
        for L, (kc, vc) in zip(self.layers, caches):
            h = L.decode(h, kc, vc, pos)
        return self.head(h)

    def decode_paged(self, ids, pools, table, slots, pos):
        h = self.embed[ids].unsqueeze(1)
        for L, (kp, vp) in zip(self.layers, pools):
            h = L.decode_paged(h, kp, vp, table, slots, pos)
        return self.head(h)


def timed(fn, iters):
    """(median ms, joules per run or None) of fn() by perflab.bench, NVML's energy where the driver reports it."""
    r = perflab.bench(fn, iterations=iters, profile="minimal")
    if not r.ok:
        raise RuntimeError(f"{r.status}: {r.get('reason')}")
    energy = r.get("energy") or {}
    j = energy.get("joules_per_run")
    return r.median_ms, (j if isinstance(j, (int, float)) and j == j else None)


def interleaved(sides, iters, rounds):
    """Each side warmed (and compiled) first, then timed in rounds, the sides alternating within each round."""
    for fn in sides.values():
        for _ in range(2):
            fn()
    torch.cuda.synchronize()
    per = {k: ([], []) for k in sides}
    for _ in range(rounds):
        for k, fn in sides.items():
            ms, j = timed(fn, iters)
            per[k][0].append(ms)
            if j is not None:
                per[k][1].append(j)
    return {k: {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms),
                "joules_per_run": statistics.median(js) if js else None} for k, (ms, js) in per.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama3-8b", choices=sorted(tel.MODELS))
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--len", type=int, default=2048, help="cache length with the new token (a multiple of 16)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-autotune", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.layers < 1 or a.batch < 1 or a.len < PAGE or a.len % PAGE:
        print(f"torch_engine_model: --layers and --batch must be >= 1 and --len a multiple of {PAGE}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_engine_model: no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    M = Model(a.model, a.layers, dev)
    L0, B, n = M.layers[0], a.batch, a.len
    modes = ["default"] + (["max-autotune"] if a.max_autotune else [])
    rows = []
    with torch.no_grad():
        ids = torch.randint(0, VOCAB, (B,), device=dev, generator=torch.Generator(device=dev).manual_seed(4))
        pos = torch.tensor([n - 1], device=dev)
        shape = (B, L0.KV, n, L0.hd)
        caches = [((torch.rand(shape, device=dev) * 2 - 1).to(torch.bfloat16),
                   (torch.rand(shape, device=dev) * 2 - 1).to(torch.bfloat16)) for _ in M.layers]
        kv_bytes = sum(2 * kc.numel() * 2 for kc, _ in caches)
        floor_bytes = M.weight_bytes() + kv_bytes
        rate = tel.copy_rate(min(floor_bytes, 4 << 30), a.iters, dev)
        floor_us = floor_bytes / rate * 1e6
        res = interleaved(tel.sides_of(M.decode, (ids, caches, pos), modes), a.iters, a.rounds)
        rows.append({"step": "decode", "sides": res})
        pages = B * n // PAGE
        perm = torch.randperm(pages, device=dev, generator=torch.Generator(device=dev).manual_seed(2))
        table = perm.view(B, n // PAGE)
        slots = table[:, -1] * PAGE + (n - 1) % PAGE
        pools = []
        for kc, vc in caches:
            pools.append((kc.transpose(1, 2).reshape(pages, PAGE, L0.KV, L0.hd).clone(),
                          vc.transpose(1, 2).reshape(pages, PAGE, L0.KV, L0.hd).clone()))
        del caches
        res = interleaved(tel.sides_of(M.decode_paged, (ids, pools, table, slots, pos), modes), a.iters, a.rounds)
        rows.append({"step": "decode paged", "sides": res})
    print(f"model decode {B} x {n} ({a.model}, {a.layers} layers + LM head): floor {floor_us:.0f} us "
          f"({floor_bytes / 1e9:.2f} GB at {rate / 1e12:.2f} TB/s)")
    for r in rows:
        print(r["step"])
        for k, v in r["sides"].items():
            v["tokens_per_s"] = B / (v["median_ms"] * 1e-3)
            v["pct_of_floor"] = 100 * floor_us / (v["median_ms"] * 1e3)
            j = v["joules_per_run"]
            v["mj_per_token"] = 1e3 * j / B if j is not None else None
            jt = f"  {v['mj_per_token']:.1f} mJ/token" if j is not None else "  (no energy counter)"
            print(f"  {k:22s} {v['median_ms']:8.3f} ms  [{v['min_ms']:.3f}, {v['max_ms']:.3f}]  "
                  f"{v['pct_of_floor']:.1f}% of floor  {v['tokens_per_s']:.0f} tokens/s{jt}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "layers": a.layers, "batch": B, "len": n, "floor_us": floor_us,
                       "copy_tbps": rate / 1e12, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
