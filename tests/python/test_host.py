"""The Python package and libperflab.so where there may be no GPU and no torch: import, the C API's argument checks,
the seed lab's names in the CLI."""
import ctypes
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, run_perflab

import perflab
from perflab import _lib

NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}


def test_import_needs_no_torch():
    """`import perflab` and a bench call's option checks work in a process where torch cannot be imported."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import perflab\n"
            "assert perflab.library_version()\n"
            "try:\n"
            "    perflab.ops\n"
            "except ImportError as e:\n"
            "    print('ops:', e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    assert p.returncode == 0, p.stderr
    assert "ops:" in p.stdout  # perflab.ops needs torch, and says so only when asked for


def test_library_found_and_versioned():
    assert _lib.lib().pl_py_api_version() == _lib.API_VERSION
    assert perflab.library_version().startswith("0.")


def test_library_not_found_says_how_to_build(monkeypatch):
    monkeypatch.setenv("PERFLAB_LIB", "/nonexistent/libperflab.so")
    with pytest.raises(perflab.LibraryNotFound, match="make"):
        _lib.find()


def test_pip_install_carries_the_library(tmp_path):
    """`make python` then `pip install ./python` (no network, the platform's setuptools): the installed package loads
    the library installed beside it."""
    import shutil
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("pip is not installed for this Python (python3-pip)")
    src = tmp_path / "python"
    shutil.copytree(os.path.join(REPO, "python"), src, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(_lib.find(), src / "perflab" / "libperflab.so")
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                        "--target", str(tmp_path / "site"), str(src)], capture_output=True, text=True)
    if p.returncode != 0 and "setuptools" in p.stderr:
        pytest.skip("setuptools is not installed for this Python (python3-setuptools)")
    assert p.returncode == 0, p.stderr
    env = {k: v for k, v in os.environ.items() if k != "PERFLAB_LIB"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    p = subprocess.run([sys.executable, "-c", "import perflab, perflab._lib as l; print(l.find())"],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(tmp_path / "site" / "perflab" / "libperflab.so")


def test_structs_match_the_library():
    """The ctypes structs have the C structs' sizes: pl_py_time refuses a pl_py_options of another size."""
    o = _lib.PyOptions()
    _lib.lib().pl_py_options_init(ctypes.byref(o))
    assert o.size == ctypes.sizeof(_lib.PyOptions)
    assert o.warmup == 3 and o.min_samples == 10 and abs(o.max_noise - 0.02) < 1e-12  # perflab run's defaults
    err = _lib.error_buffer()
    o.size -= 8
    v = (_lib.PyVariant * 1)()
    assert not _lib.lib().pl_py_time(ctypes.byref(o), v, 1, None, err, len(err))
    assert b"rebuild" in err.value


@pytest.mark.parametrize("options, message", [
    ({"mode": "warm"}, "use hot"),
    ({"target": "nocolon"}, "group:name"),
    ({"profile": "full"}, "none, minimal"),
    ({"min_time_s": 5.0, "max_time_s": 1.0}, "out of range"),
])
def test_bad_options_are_refused_before_any_gpu_work(options, message):
    kwargs = dict(options)
    with pytest.raises(perflab.PerflabError, match=message):
        perflab.bench(lambda: None, **kwargs)


def test_compare_refuses_two_variants_of_one_name():
    with pytest.raises(perflab.PerflabError):
        perflab.compare({}, show=False)
    with pytest.raises(TypeError):
        perflab.compare({"baseline": 3}, show=False)


def test_bench_of_a_c_callback():
    """A C callback (a ctypes function that enqueues nothing) timed by the harness: statistics where there is a GPU,
    else the one line saying there is none (perflab run's exit code 3), and the test is skipped with it."""
    calls = []
    cb = _lib.RUN_FN(lambda user, stream: calls.append(stream) or 0)
    try:
        r = perflab.bench(cb, None, None, iterations=20, profile="none")
    except perflab.NoGPU as e:
        pytest.skip(f"no GPU here: {e}")
    assert r.status == "unverified"
    assert r.stats["n"] == 20 and len(r.samples_ms) == 20
    assert calls


# ---- the kernels' argument checks: answered by the library without a launch (no GPU needed) ----

def _err():
    return _lib.error_buffer()


def test_gemm_checks():
    e = _err()
    assert _lib.lib().pl_py_gemm_bf16(0, 8, 8, 0, 1, 1, 1, None, e, len(e)) == -1
    assert b"gemm" in e.value
    assert _lib.lib().pl_py_gemm_bf16(8, 8, 8, 2, 1, 1, 1, None, e, len(e)) == -1
    assert b"b_layout" in e.value
    assert _lib.lib().pl_py_gemm_fp8(128, 128, 100, 16, 16, 16, None, None, 0, None, e, len(e)) == -1
    assert b"K % 16" in e.value


def test_grouped_gemm_checks_as_the_kernel_library():
    e = _err()
    o, a, b, d = 0x100000, 0x200000, 0x300000, 0x400000  # aligned, never dereferenced
    supports = _lib.lib().pl_py_grouped_gemm_supports
    assert supports(8, 4096, 1024, 8 * 2048, o, a, b, d, 0, e, len(e)) == 1, e.value
    assert supports(8, 4096, 1000, 8 * 2048, o, a, b, d, 0, e, len(e)) == 1  # bf16 takes K % 8 == 0
    assert supports(8, 4096, 1000, 8 * 2048, o, a, b, d, 1, e, len(e)) == 0
    assert b"K % 16 == 0" in e.value
    assert supports(0, 4096, 1024, 16, o, a, b, d, 0, e, len(e)) == 0
    assert b"groups" in e.value
    assert supports(8, 4096, 1024, 16, None, a, b, d, 0, e, len(e)) == 0
    assert b"device pointers" in e.value


def test_row_kernel_checks():
    e = _err()
    lib = _lib.lib()
    assert lib.pl_py_rms_norm(16, 16, 16, 0, 8, 1e-6, None, e, len(e)) == -1 and b"rows" in e.value
    assert lib.pl_py_rms_norm(16, None, 16, 4, 8, 1e-6, None, e, len(e)) == -1 and b"weight" in e.value
    assert lib.pl_py_rms_norm(16, 16, 24, 4, 8, 1e-6, None, e, len(e)) == -1 and b"alignment" in e.value
    assert lib.pl_py_layer_norm(16, 16, None, 16, 4, 8, 1e-5, None, e, len(e)) == -1 and b"bias" in e.value
    assert lib.pl_py_softmax(None, 16, 4, 8, None, e, len(e)) == -1 and b"softmax" in e.value


def test_attention_checks():
    e = _err()
    lib = _lib.lib()
    p = 0x100000
    assert lib.pl_py_flash_attn(1, 8, 2, 128, 96, 0, 0, 0.1, p, p, p, p, p, None, e, len(e)) == -1
    assert b"head_dim" in e.value
    assert lib.pl_py_flash_attn(1, 8, 3, 128, 64, 0, 0, 0.1, p, p, p, p, p, None, e, len(e)) == -1
    assert b"kv_heads" in e.value
    assert lib.pl_py_flash_attn(1, 8, 2, 128, 64, 0, 5, 0.1, p, p, p, p, p, None, e, len(e)) == -1
    assert b"layout" in e.value
    assert lib.pl_py_paged_decode(2, 8, 2, 128, 7, 4, 0.1, p, p, p, p, p, p, p, 1 << 20, None, e, len(e)) == -1
    assert b"page_size" in e.value


# ---- the seed lab's names ----

def test_every_chapter_and_seed_name_resolves(perflab_bin):
    """ch1..ch20 and every seed name list their targets or say what they would need (never an unknown name)."""
    for n in range(1, 21):
        p = run_perflab(perflab_bin, "list", "--chapter", str(n))
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith(f"ch{n} ("), p.stdout[:200]
        assert "no perflab target yet; it would need" in p.stdout or ":  " in p.stdout or "  - baseline" in p.stdout
    table = open(os.path.join(REPO, "labs", "seed_names.def"), encoding="utf-8").read()
    names = [line.split('"')[1] for line in table.splitlines() if line.startswith("PL_SEED_NAME(")]
    assert "labs/fullstack_cluster:moe_readiness" in names
    for name in names:
        p = run_perflab(perflab_bin, "list", "--chapter", name)
        assert p.returncode == 0, p.stderr


def test_empty_chapter_says_what_it_needs(perflab_bin):
    p = run_perflab(perflab_bin, "run", "--targets", "ch5", env=NO_GPU)
    assert p.returncode == 2
    assert "Storage/IO" in p.stderr and "would need" in p.stderr


def test_seed_target_names_select_perflab_targets(perflab_bin):
    p = run_perflab(perflab_bin, "list", "--json", "--chapter", "labs/fullstack_cluster:moe_readiness")
    assert p.returncode == 0 and '"name": "fullstack:moe_readiness"' in p.stdout, p.stdout[:300]
    p = run_perflab(perflab_bin, "list", "-c", "ch7")
    assert "memory:coalescing" in p.stdout and "gemm:bf16" not in p.stdout


def test_target_extra_arg_keeps_the_seed_quotes(perflab_bin, tmp_path):
    """T="--flag v" as the seed writes it: the quotes around the value group it, they are not part of it; a bad
    parameter inside them is still refused (exit 2), a good one reaches the GPU check (exit 3 with no GPU)."""
    base = ["run", "--artifacts-dir", str(tmp_path), "--targets", "labs/fullstack_cluster:moe_readiness",
            "--target-extra-arg"]
    good = run_perflab(perflab_bin, *base,
                       'labs/fullstack_cluster:moe_readiness="--skews 1.0,1.5 --max-p99-ms 6.0"', env=NO_GPU)
    assert good.returncode == 3, good.stderr
    bad = run_perflab(perflab_bin, *base, 'labs/fullstack_cluster:moe_readiness="--no-such-flag 1"', env=NO_GPU)
    assert bad.returncode == 2 and "no-such-flag" in bad.stderr


@pytest.mark.parametrize("alias, verb", [
    (["compare-precision"], ["calc", "precision"]), (["dump-hw"], ["hw"]), (["probe-hw"], ["probe"]),
    (["list-targets"], ["list"])])
def test_seed_verbs_are_aliases(perflab_bin, alias, verb):
    a = run_perflab(perflab_bin, *alias, "--help")
    b = run_perflab(perflab_bin, *verb, "--help")
    assert a.returncode == 0 and a.stdout == b.stdout


# ---- with torch (CPU is enough): the Python side's checks and the verification's arithmetic ----

def test_ops_refuse_what_the_kernels_cannot_take():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    x = torch.randn(8, 64, dtype=torch.bfloat16)
    w = torch.randn(64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="CUDA tensors"):
        perflab.ops.rms_norm(x, w)
    with pytest.raises(TypeError, match="torch.Tensor"):
        perflab.ops.layer_norm([1.0], w)
    with pytest.raises(ValueError, match="last dimension"):
        perflab.ops.softmax(x, dim=0)
    with pytest.raises(TypeError, match="bfloat16"):
        perflab.ops.rms_norm(x.float(), w)
    with pytest.raises(ValueError, match="contiguous"):
        perflab.ops.rms_norm(x.T, w)


def test_verification_arithmetic():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    from perflab._timing import _dtype_name, _errors
    ref = torch.tensor([3.0, 4.0, 0.0])
    out = torch.tensor([3.0, 4.0, 1.0])
    rel, max_abs, n, nonfinite = _errors(out, ref)
    assert abs(rel - 1 / 5) < 1e-12 and max_abs == 1.0 and n == 3 and nonfinite == 0
    rel, _, _, nonfinite = _errors((out, torch.tensor([float("nan")])), (ref, torch.tensor([1.0])))
    assert nonfinite == 1 and abs(rel - 1 / 5) < 1e-12  # over the finite elements, as perflab's C verification
    assert _dtype_name(torch.zeros(1, dtype=torch.bfloat16)) == "bf16"
    assert _dtype_name([torch.zeros(1, dtype=torch.float16)]) == "fp16"


# ---- host work (no GPU): the whole path from Python through the harness to a run folder the CLI reads ----

def _spin(seconds):
    import time
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pass
    return 42.0


def test_compare_of_host_callables_writes_a_run_the_cli_reads(perflab_bin, tmp_path):
    variants = {"baseline": lambda: _spin(200e-6), "fast": lambda: _spin(50e-6), "wrong": lambda: _spin(50e-6) + 1}
    c = perflab.compare(variants, host=True, artifacts_dir=str(tmp_path), iterations=30, show=False,
                        target="python:spin", summary="host spins of 200 and 50 us")
    assert c["baseline"].status == "ok" and c["fast"].status == "ok", c.table
    assert c["wrong"].status == "failed_verification" and not c["wrong"].get("stats")
    assert c.status == "failed_verification"
    assert c["fast"].stats["n"] == 30 and c["fast"].verification["passed"]
    s = c.speedup("fast")
    assert s["significant"] and s["ci_low"] > 1.5, s
    assert "fast" in c.table and "wrong" in c.table
    run = json.load(open(os.path.join(c.run_dir, "run.json")))
    assert run["targets"][0]["name"] == "python:spin" and run["complete"]
    assert run_perflab(perflab_bin, "report", c.run_dir, "--out", str(tmp_path / "report")).returncode == 0
    p = run_perflab(perflab_bin, "compare", c.run_dir, c.run_dir)
    assert p.returncode == 0 and "python:spin" in p.stdout, p.stdout + p.stderr


def test_bench_raises_the_callables_exception():
    def broken():
        raise KeyError("from the callable")
    with pytest.raises(KeyError, match="from the callable"):
        perflab.bench(broken, host=True, iterations=5)


def test_bench_of_host_work_reports_statistics():
    r = perflab.bench(_spin, 100e-6, host=True, reference=42.0, iterations=20, bytes=1e6)
    assert r.status == "ok" and r.verification["passed"]
    assert 0.09 < r.median_ms < 1.0, r
    assert r.gbps > 0 and len(r.samples_ms) == 20


def test_comparison_scripts_time_with_perflab_bench():
    """Every scripts/torch_*.py comparison times PyTorch through perflab.bench (torch_timing.py or perflab itself),
    never with CUDA events of its own: the rules the table is read by are perflab's. torch_nccl_bench.py is the one
    exception, and says why: a collective's time spans every rank's stream, perflab.bench times one process's."""
    scripts = os.path.join(REPO, "scripts")
    names = sorted(n for n in os.listdir(scripts) if n.startswith("torch_") and n.endswith(".py"))
    assert len(names) >= 8, names
    for name in names:
        if name in ("torch_timing.py", "torch_nccl_bench.py"):
            continue
        text = open(os.path.join(scripts, name), encoding="utf-8").read()
        assert any(w in text for w in ("import torch_timing", "from torch_timing import", "import perflab",
                                       "import torch_engine_layer")), name
        assert "Event(enable_timing" not in text, f"{name} times with CUDA events of its own"
