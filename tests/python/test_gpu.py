"""The Python package on a GPU with torch: perflab.bench against `perflab run` on the same kernel and shape,
perflab.ops against PyTorch's own ops (torch.testing), torch.compile through the custom ops, and perflab.compare's run
folder read by the CLI. Skipped with the reason where there is no GPU or no torch."""
import json
import math
import os
import statistics

import pytest

from conftest import run_perflab

import perflab

pytestmark = pytest.mark.gpu

# A row kernel under 30 µs on an H100/H200 (4096 × 4096 bf16: 32 MiB read, 32 MiB written), where launch overhead
# would show inside events that are not latched.
ROWS, COLS = 4096, 4096


def _rmsnorm_ref(torch, x, w, eps=1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(torch.bfloat16)


def _close(torch, out, ref, rel=2e-2):
    """torch.testing with bf16's tolerance, scaled to the reference's magnitude."""
    torch.testing.assert_close(out.float(), ref.float(), rtol=rel, atol=rel * float(ref.float().abs().max()))


def _target_median_ms(perflab_bin, tmp_path, target, variant, args):
    """The median of one variant of `perflab run` (no expectations: other shapes than the stored ones)."""
    (tmp_path / "no-expectations").mkdir(exist_ok=True)
    p = run_perflab(perflab_bin, "run", "--targets", target, "--target-extra-arg", f"{target}={args}",
                    "--artifacts-dir", str(tmp_path), "--expectations-dir", str(tmp_path / "no-expectations"),
                    "--json")
    assert p.returncode == 0, p.stderr
    variants = json.loads(p.stdout)["targets"][0]["variants"]
    return next(v for v in variants if v["name"] == variant)["stats"]["median_ms"]


def test_bench_within_one_percent_of_perflab_run(torch_gpu, perflab_bin, tmp_path):
    """perflab.bench of perflab.ops.rms_norm times the kernel norm:rmsnorm's `fused` variant launches, at the same
    shape on the same GPU: the medians agree within 1% (the same timing code; only the caller differs)."""
    torch = torch_gpu
    x = torch.rand(ROWS, COLS, device="cuda", dtype=torch.bfloat16) * 2 - 1  # the target's inputs: uniform in [-1, 1)
    w = torch.rand(COLS, device="cuda", dtype=torch.bfloat16) * 2 - 1
    ref = _rmsnorm_ref(torch, x, w)
    fused_ms, bench_ms = [], []
    for _ in range(3):  # alternating, as test_ops_as_fast_as_their_targets does
        fused_ms.append(_target_median_ms(perflab_bin, tmp_path, "norm:rmsnorm", "fused",
                                          f"--rows {ROWS} --cols {COLS}"))
        r = perflab.bench(perflab.ops.rms_norm, x, w, reference=ref, bytes=2 * x.numel() * 2)
        assert r.status == "ok", r.get("reason")
        bench_ms.append(r.median_ms)
    ratio = statistics.median(bench_ms) / statistics.median(fused_ms)
    print(f"perflab.bench {[round(t * 1e3, 2) for t in bench_ms]} us, "
          f"perflab run {[round(t * 1e3, 2) for t in fused_ms]} us, ratio of the medians {ratio:.4f}")
    assert abs(ratio - 1) <= 0.01


def _op_cases(torch):
    """(target, its variant, its arguments, a call of perflab.ops on the same shapes): the kernel each op launches."""
    bf = dict(device="cuda", dtype=torch.bfloat16)

    def uniform(*shape):  # the targets' inputs: uniform in [-1, 1) (a power-bound kernel's speed depends on its data)
        return torch.rand(*shape, **bf) * 2 - 1

    x, w, b = uniform(ROWS, COLS), uniform(COLS), uniform(COLS)
    hopper = torch.cuda.get_device_capability() == (9, 0)
    # attention:flash_fwd's Q and K are uniform in [-2, 2) (a peaked softmax), V in [-1, 1)
    q, k, v = 2 * uniform(4, 16, 4096, 128), 2 * uniform(4, 16, 4096, 128), uniform(4, 16, 4096, 128)
    batch, heads, kv_heads, dim, page, kv_len = 64, 32, 8, 128, 16, 8192
    max_pages = kv_len // page
    qd = uniform(batch, heads, dim)
    kc, vc = uniform(batch * max_pages, page, kv_heads, dim), uniform(batch * max_pages, page, kv_heads, dim)
    table = torch.arange(batch * max_pages, device="cuda", dtype=torch.int32).view(batch, max_pages)
    lens = torch.full((batch,), kv_len, device="cuda", dtype=torch.int32)
    rows = f"--rows {ROWS} --cols {COLS}"
    return [  # the last field: the target is power-bound (its samples kept down to half the maximum clock)
        ("norm:layernorm", "fused", rows, lambda: perflab.ops.layer_norm(x, w, b), False),
        ("softmax:rows", "online_fused", rows, lambda: perflab.ops.softmax(x), False),
        ("attention:flash_fwd", "flash_wgmma" if hopper else "flash_mma", "--batch 4 --heads 16 --seq 4096",
         lambda: perflab.ops.flash_attn(q, k, v), True),
        ("attention:decode_paged", "balanced_mma", f"--len-spread 0 --kv-len {kv_len}",
         lambda: perflab.ops.paged_decode(qd, kc, vc, table, lens), False),
    ]


def test_ops_as_fast_as_their_targets(torch_gpu, perflab_bin, tmp_path):
    """Each op from Python within 2% of the same kernel in its target (perflab run), same shapes, same inputs'
    distribution, same GPU. The two sides alternate three times (target, Python, ...) and their medians are compared:
    a power-bound kernel's time follows the GPU's power state, which one run after the other would not share."""
    torch = torch_gpu
    failures = []
    for target, variant, args, call, power_bound in _op_cases(torch):
        ms_target, ms_python = [], []
        for _ in range(3):
            ms_target.append(_target_median_ms(perflab_bin, tmp_path, target, variant, args))
            ms_python.append(perflab.bench(call, power_bound=power_bound).median_ms)
        ratio = statistics.median(ms_python) / statistics.median(ms_target)
        print(f"{target} {variant}: perflab.ops {[round(t * 1e3, 2) for t in ms_python]} us, "
              f"target {[round(t * 1e3, 2) for t in ms_target]} us, ratio of the medians {ratio:.4f}")
        if abs(ratio - 1) > 0.02:
            failures.append(f"{target} {variant}: ratio {ratio:.4f}")
    assert not failures, failures


def test_ops_match_pytorch(torch_gpu):
    torch = torch_gpu
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(1)

    def rnd(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=g)

    a, b = rnd(333, 512), rnd(768, 512)
    _close(torch, perflab.ops.gemm(a, b), a.float() @ b.float().T)
    bk = b.T.contiguous()
    _close(torch, perflab.ops.gemm(a, bk, b_layout="kn"), a.float() @ bk.float())
    x, w, bias = rnd(77, 1001), rnd(1001), rnd(1001)
    _close(torch, perflab.ops.rms_norm(x, w), _rmsnorm_ref(torch, x, w))
    _close(torch, perflab.ops.layer_norm(x, w, bias), F.layer_norm(x.float(), (1001,), w.float(), bias.float(), 1e-5))
    _close(torch, perflab.ops.layer_norm(x, w), F.layer_norm(x.float(), (1001,), w.float(), None, 1e-5))
    _close(torch, perflab.ops.softmax(x), torch.softmax(x.float(), -1))
    for causal, dim in ((False, 128), (True, 128), (False, 256), (True, 256)):
        q, k, v = rnd(2, 8, 300, dim), rnd(2, 2, 300, dim), rnd(2, 2, 300, dim)
        ref = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(4, 1),
                                             v.float().repeat_interleave(4, 1), is_causal=causal)
        _close(torch, perflab.ops.flash_attn(q, k, v, causal=causal), ref)


def test_fp8_and_grouped_gemm_match_pytorch(torch_gpu):
    torch = torch_gpu
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("FP8 and grouped GEMMs are sm_90 (Hopper) kernels")
    g = torch.Generator(device="cuda").manual_seed(2)
    a = torch.randn(256, 512, device="cuda", generator=g)
    b = torch.randn(384, 512, device="cuda", generator=g)
    sa, sb = torch.tensor([0.5], device="cuda"), torch.tensor([0.25], device="cuda")
    a8, b8 = (a / sa).to(torch.float8_e4m3fn), (b / sb).to(torch.float8_e4m3fn)
    ref = (a8.float() * sa) @ (b8.float() * sb).T
    _close(torch, perflab.ops.gemm(a8, b8, sa, sb), ref, rel=5e-2)
    counts = [100, 0, 37, 211]
    offsets = torch.tensor([0] + list(torch.tensor(counts).cumsum(0)), device="cuda", dtype=torch.int32)
    x = torch.randn(sum(counts), 256, device="cuda", dtype=torch.bfloat16, generator=g)
    wts = torch.randn(len(counts), 512, 256, device="cuda", dtype=torch.bfloat16, generator=g)
    out = perflab.ops.grouped_gemm(x, wts, offsets)
    start = 0
    for e, c in enumerate(counts):
        if c:
            _close(torch, out[start:start + c], x[start:start + c].float() @ wts[e].float().T)
        start += c


def test_paged_decode_matches_pytorch(torch_gpu):
    torch = torch_gpu
    g = torch.Generator(device="cuda").manual_seed(3)
    batch, heads, kv_heads, dim, page, max_pages = 3, 8, 2, 128, 16, 6
    pages = batch * max_pages
    q = torch.randn(batch, heads, dim, device="cuda", dtype=torch.bfloat16, generator=g)
    kc = torch.randn(pages, page, kv_heads, dim, device="cuda", dtype=torch.bfloat16, generator=g)
    vc = torch.randn(pages, page, kv_heads, dim, device="cuda", dtype=torch.bfloat16, generator=g)
    table = torch.randperm(pages, device="cuda", generator=g).to(torch.int32).view(batch, max_pages)
    lens = torch.tensor([1, 50, max_pages * page], device="cuda", dtype=torch.int32)
    o = perflab.ops.paged_decode(q, kc, vc, table, lens)
    scale = 1 / math.sqrt(dim)
    for i in range(batch):
        n = int(lens[i])
        rows = torch.cat([kc[table[i, p]] for p in range(max_pages)])[:n].float()  # [n, kv_heads, dim]
        vals = torch.cat([vc[table[i, p]] for p in range(max_pages)])[:n].float()
        k = rows.repeat_interleave(heads // kv_heads, 1).transpose(0, 1)  # [heads, n, dim]
        v = vals.repeat_interleave(heads // kv_heads, 1).transpose(0, 1)
        p = torch.softmax(scale * (k @ q[i].float().unsqueeze(-1)).squeeze(-1), -1)
        _close(torch, o[i], (p.unsqueeze(1) @ v).squeeze(1))


def test_argument_checks_raise_clear_errors(torch_gpu):
    torch = torch_gpu
    x = torch.randn(8, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="bfloat16"):
        perflab.ops.rms_norm(x.float(), w)
    with pytest.raises(ValueError, match="CUDA tensors"):
        perflab.ops.rms_norm(x.cpu(), w)
    with pytest.raises(ValueError, match="contiguous"):
        perflab.ops.rms_norm(x.T, w)
    with pytest.raises(ValueError, match="elements"):
        perflab.ops.rms_norm(x, w[:32])
    with pytest.raises(ValueError, match="K"):
        perflab.ops.gemm(x, torch.randn(16, 32, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="head_dim"):
        q = torch.randn(1, 2, 16, 96, device="cuda", dtype=torch.bfloat16)
        perflab.ops.flash_attn(q, q, q)


def test_torch_compile_calls_the_custom_ops(torch_gpu):
    torch = torch_gpu
    if not perflab.ops.REGISTERED:
        pytest.skip("this torch has no torch.library.custom_op (2.4 or later)")
    x = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.perflab.rms_norm.default, (x, w, 1e-6))

    def f(x, w):
        return perflab.ops.softmax(perflab.ops.rms_norm(x * 2, w)) + 1

    compiled = torch.compile(f, fullgraph=True)
    _close(torch, compiled(x, w), f(x, w))


def test_compare_writes_a_run_the_cli_reads(torch_gpu, perflab_bin, tmp_path):
    """eager vs torch.compile vs perflab's kernel, verified and interleaved; the run folder is read by perflab report
    and perflab compare; a wrong variant fails its verification and is not timed."""
    torch = torch_gpu
    x = torch.randn(ROWS, COLS, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(COLS, device="cuda", dtype=torch.bfloat16)

    def eager(x, w):
        return _rmsnorm_ref(torch, x, w)

    variants = {"baseline": eager, "perflab": perflab.ops.rms_norm, "wrong": lambda x, w: eager(x, w) * 1.5}
    c = perflab.compare(variants, x, w, bytes=2 * x.numel() * 2, artifacts_dir=str(tmp_path), max_time_s=1.0)
    assert c["baseline"].status == "ok" and c["perflab"].status == "ok"
    assert c["wrong"].status == "failed_verification"
    assert c.speedup("perflab")["value"] > 0 and c["perflab"].gbps > 0
    assert os.path.isfile(os.path.join(c.run_dir, "run.json"))
    assert run_perflab(perflab_bin, "report", c.run_dir, "--out", str(tmp_path / "report")).returncode == 0
    assert run_perflab(perflab_bin, "compare", c.run_dir, c.run_dir).returncode == 0
