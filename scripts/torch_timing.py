"""What the scripts/torch_*_bench.py comparisons share: PyTorch's calls timed by perflab.bench (the harness of `perflab
run`, in this process on torch's current stream: warm-up, the latch that keeps Python's launch cost out of the events,
adaptive stopping, throttled samples discarded), and torch.compile (default and max-autotune) beside eager.

The package is found in the repository (python/) and its library in build/ unless PERFLAB_LIB says otherwise.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))

import perflab  # noqa: E402  (after the path)

COMPILE_MODES = (("torch.compile", {}), ("torch.compile max-autotune", {"mode": "max-autotune"}))


def median_ms(fn, nbytes=None, flops=None, host_bound=False, **timing):
    """perflab.bench's median of fn() in ms (hot, latched unless host_bound; perflab run's adaptive stopping unless
    timing options say otherwise: iterations, min_time_s, max_time_s, ...)."""
    r = perflab.bench(fn, bytes=nbytes, flops=flops, host_bound=host_bound, profile="none", **timing)
    if not r.ok:
        raise RuntimeError(f"{r.status}: {r.get('reason')}")
    return r.median_ms


def compiled(fn, what="this call"):
    """[(label, fn compiled)] for torch.compile's default and max-autotune modes, each compiled (and run once) here,
    outside the timing; a mode that cannot compile is left out with the reason printed on stderr."""
    import torch
    if not hasattr(torch, "compile"):
        print(f"torch.compile: not in torch {torch.__version__}: {what} timed eager only", file=sys.stderr)
        return []
    out = []
    for label, kwargs in COMPILE_MODES:
        try:
            c = torch.compile(fn, **kwargs)
            c()
            torch.cuda.synchronize()
            out.append((label, c))
        except Exception as e:  # noqa: BLE001 - an inductor or backend failure: said, and the row left out
            print(f"{label}: skipped for {what}: {str(e).splitlines()[0][:160]}", file=sys.stderr)
    return out
