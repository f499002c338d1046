"""perflab.bench and perflab.compare: callables timed by the harness of `perflab run`, in this process.

The callables become the variants of one target that libperflab.so runs on the current CUDA stream (torch's, when
torch is imported and has a GPU): the same verification before timing, warm-up, latch (the stream is held until a
whole sample is enqueued, so that the events time the GPU's work and not Python's launch cost), L2 flush in cold mode,
adaptive stopping, throttled samples discarded, interleaved rounds, and statistics with bootstrap intervals as every
target's variant. The C timing loop calls back into Python through ctypes.
"""
import ctypes
import math
import shlex
import sys

from . import _lib


class PerflabError(RuntimeError):
    """The harness refused the request (bad options, no usable GPU); the message names the problem and the fix."""


class NoGPU(PerflabError):
    """No usable GPU: perflab run's exit code 3."""


class Result(dict):
    """One variant as run.json holds it (status, verification, stats, derived {tflops, gbps, ...}, timing
    {throttled_discarded, reps_per_sample, latched, stop_reason, ...}, speedup, telemetry, samples_ms), readable as
    attributes too, the fields of derived and timing included (r.stats["median_ms"], r.median_ms, r.gbps,
    r.throttled_discarded)."""

    def __getattr__(self, key):
        for d in (self, self.get("derived") or {}, self.get("timing") or {}):
            if key in d:
                return d[key]
        raise AttributeError(key)

    @property
    def median_ms(self):
        return (self.get("stats") or {}).get("median_ms", math.nan)

    @property
    def ok(self):
        return self.get("status") in ("ok", "unverified")

    def __repr__(self):
        stats = self.get("stats") or {}
        return (f"<perflab.Result {self.get('name')}: {self.get('status')}, median {stats.get('median_ms', math.nan):.6g} ms"
                f" over {stats.get('n', 0)} samples, noise {100 * stats.get('rel_noise', math.nan):.2f}%>")


class Comparison:
    """The variants of a perflab.compare, the target as run.json holds it, the run folder and the table."""

    def __init__(self, target, run_dir, table):
        self.target = target
        self.run_dir = run_dir
        self.table = table
        self.variants = {v["name"]: Result(v) for v in target.get("variants", [])}
        self.status = target.get("status")

    def __getitem__(self, name):
        return self.variants[name]

    def speedup(self, name):
        """median(baseline) / median(name) with its 95% bootstrap interval: {"value", "ci_low", "ci_high", ...}."""
        return self.variants[name].get("speedup")

    def __repr__(self):
        return f"<perflab.Comparison {self.target.get('name')}: {self.status}, {len(self.variants)} variants>"


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _stream_and_device(stream, device):
    """The stream the work runs on (an int handle) and its GPU: torch's current stream when torch has a GPU."""
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        dev = torch.cuda.current_device() if device is None else int(device)
        if stream is None:
            stream = torch.cuda.current_stream(dev).cuda_stream
        elif hasattr(stream, "cuda_stream"):
            stream = stream.cuda_stream
        return int(stream or 0), dev
    return int(stream or 0), int(device or 0)


_DTYPE_NAMES = {"float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16",
                "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "int32": "int32"}


def _tensors(x):
    """The tensors of an output (a tensor, or tuples/lists/dicts of them), in order."""
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _tensors(item)]
    if isinstance(x, dict):
        return [t for k in sorted(x) for t in _tensors(x[k])]
    return [x]


def _dtype_name(out):
    first = _tensors(out)[0] if out is not None else None
    name = str(getattr(first, "dtype", "")).replace("torch.", "")
    return _DTYPE_NAMES.get(name, "fp32")


def _errors(out, ref):
    """Relative L2 error over the finite elements, largest absolute error, elements, NaN/Inf count (in float64)."""
    outs, refs = _tensors(out), _tensors(ref)
    if len(outs) != len(refs):
        raise PerflabError(f"the output has {len(outs)} tensors, the reference {len(refs)}")
    err2 = ref2 = max_abs = 0.0
    elements = nonfinite = 0
    for o, r in zip(outs, refs):
        if hasattr(o, "detach"):
            o64, r64 = o.detach().double().flatten(), r.detach().double().flatten().to(o.device)
            if o64.numel() != r64.numel():
                raise PerflabError(f"output of {o64.numel()} elements against a reference of {r64.numel()}")
            finite = o64.isfinite()
            nonfinite += int((~finite).sum())
            d = (o64 - r64)[finite]
            err2 += float((d * d).sum())
            ref2 += float((r64[finite] * r64[finite]).sum())
            max_abs = max(max_abs, float(d.abs().max()) if d.numel() else 0.0)
            elements += o64.numel()
        else:
            o, r = float(o), float(r)
            if not math.isfinite(o):
                nonfinite += 1
            else:
                err2, ref2, max_abs = err2 + (o - r) ** 2, ref2 + r * r, max(max_abs, abs(o - r))
            elements += 1
    rel = math.sqrt(err2 / ref2) if ref2 > 0 else math.sqrt(err2)
    return rel, max_abs, elements, nonfinite


class _Variant:
    """One callable and what its C callbacks need (kept alive while the library may call them)."""

    def __init__(self, name, fn, args, kwargs, technique, check, tolerance, dtype, host_bound):
        self.name, self.fn, self.args, self.kwargs = name, fn, args, kwargs
        self.technique, self.check_fn, self.tolerance, self.dtype = technique, check, tolerance, dtype
        self.host_bound = host_bound
        self.reference = None
        self.last = None
        self.error = None
        self.c_run = _lib.RUN_FN(self._run)
        self.c_check = _lib.CHECK_FN(self._check)

    def _run(self, _user, _stream):
        try:
            # the previous output is dropped first, so that torch's allocator hands its memory to this call: the
            # callable then writes the same buffer every run, as a target's variant does (and L2 holds the same bytes)
            self.last = None
            self.last = self.fn(*self.args, **self.kwargs)
            return 0
        except BaseException as e:  # raised again by the caller once the harness has stopped
            self.error = self.error or e
            return 1

    def _check(self, _user, out):
        try:
            c = out.contents
            verdict = self.check_fn(self.last, self.reference) if callable(self.check_fn) else None
            if verdict is None:
                c.rel_l2_error, c.max_abs_error, c.elements, c.nonfinite = _errors(self.last, self.reference)
                c.verdict = -1
            else:
                ok, msg = verdict if isinstance(verdict, tuple) else (verdict, "")
                c.verdict = 1 if ok else 0
                c.message = str(msg or ("the check passed" if ok else "the check failed")).encode()[:255]
            return 0
        except BaseException as e:
            self.error = self.error or e
            return 1

    def struct(self, verified):
        v = _lib.PyVariant()
        v.size = ctypes.sizeof(_lib.PyVariant)
        v.name = self.name.encode()
        v.technique = (self.technique or "").encode()
        v.run = self.c_run
        v.check = self.c_check if verified else _lib.CHECK_FN()
        v.dtype = (self.dtype or "bf16").encode()
        v.tolerance = float(self.tolerance or 0.0)
        v.host_bound = int(bool(self.host_bound))
        return v


_OPTION_FIELDS = ("iterations", "warmup", "min_samples", "min_time_s", "max_time_s", "max_noise",
                  "throttle_threshold", "rounds", "seed")


def _options(target, summary, mode, profile, device, flops, bytes_read, bytes_written, power_bound, graph,
             artifacts_dir, timing, host=False):
    o = _lib.PyOptions()
    _lib.lib().pl_py_options_init(ctypes.byref(o))
    o.target, o.summary = target.encode(), (summary or "").encode() or None
    o.mode, o.profile = mode.encode(), profile.encode()
    o.device = device
    o.flops, o.bytes_read, o.bytes_written = float(flops or 0), float(bytes_read or 0), float(bytes_written or 0)
    o.power_bound, o.graph = int(bool(power_bound)), int(bool(graph))
    o.artifacts_dir = artifacts_dir.encode() if artifacts_dir else None
    o.host = int(bool(host))
    for key, value in timing.items():
        if key not in _OPTION_FIELDS:
            raise TypeError(f"unknown option {key!r}: the timing options are {', '.join(_OPTION_FIELDS)}")
        if value is not None:
            setattr(o, key, value)
    return o


def _command_line():
    return "python3 " + " ".join(shlex.quote(a) for a in (sys.argv or ["-c"]))


def _time(variants, options, stream, verified, artifacts_dir):
    """Run the variants as one target; returns (target dict, run folder or None, table text)."""
    library = _lib.lib()
    structs = (_lib.PyVariant * len(variants))(*[v.struct(verified) for v in variants])
    err = _lib.error_buffer()
    handle = library.pl_py_time(ctypes.byref(options), structs, len(variants), ctypes.c_void_p(stream), err,
                                len(err))
    if not handle:
        message = err.value.decode()
        raise (NoGPU if message.startswith("no usable GPU") else PerflabError)(message)
    try:
        for v in variants:
            if v.error is not None:
                raise v.error
        import json
        target = json.loads(_lib.take_string(library.pl_py_result_json(handle)))
        run_dir = None
        if artifacts_dir:
            out = ctypes.create_string_buffer(4096)
            if library.pl_py_result_write(handle, artifacts_dir.encode(), _command_line().encode(), out, len(out),
                                          err, len(err)) != 0:
                raise PerflabError(err.value.decode())
            run_dir = out.value.decode()
        table = _lib.take_string(library.pl_py_result_table(handle))
        return target, run_dir, table
    finally:
        library.pl_py_result_free(handle)


def _reference_of(reference, fn, args, kwargs):
    if reference is None:
        return None
    if callable(reference):
        return reference(*args, **kwargs)
    return reference


def _sync():
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


def bench(fn, *args, reference=None, check=None, mode="hot", flops=None, bytes=None, bytes_read=None,
          bytes_written=None, name="callable", target="python:bench", dtype=None, tolerance=None, profile="minimal",
          host_bound=False, graph=False, stream=None, device=None, artifacts_dir=None, kwargs=None, host=False,
          power_bound=False, **timing):
    """Time fn(*args) on the current CUDA stream by perflab's rules; returns a Result (the statistics of a target's
    variant). reference: the expected output (or a callable of the same arguments computing it): the output of the
    checked run is compared with it first (relative L2 error against the dtype's tolerance, NaN/Inf fail), and a wrong
    result is status "failed_verification", not timed. check(out, ref) -> bool | (bool, message) replaces that
    comparison. flops / bytes (or bytes_read + bytes_written) of one call give TFLOP/s and GB/s. Timing options as
    perflab run's: iterations, warmup, min_samples, min_time_s, max_time_s, max_noise (a fraction),
    throttle_threshold (a fraction), seed. power_bound=True: judged as a power-bound target is (samples kept down to
    half the maximum SM clock, where a kernel at the power limit runs; otherwise three quarters), so that its median
    compares with that target's. artifacts_dir: also write a run folder there. host=True: work on the host (no GPU
    needed), timed with the host clock."""
    kwargs = kwargs or {}
    stream, dev = _stream_and_device(stream, device)
    ref = _reference_of(reference, fn, args, kwargs)
    verified = ref is not None or check is not None
    v = _Variant(name, fn, args, kwargs, "", check, tolerance, dtype, host_bound)
    v.reference = ref
    if verified and dtype is None:
        v.dtype = _dtype_name(ref if ref is not None else fn(*args, **kwargs))
    _sync()
    options = _options(target, None, mode, profile, dev, flops, bytes_read if bytes is None else bytes,
                       bytes_written, power_bound, graph, artifacts_dir, timing, host)
    t, run_dir, _ = _time([v], options, 0 if host else stream, verified, artifacts_dir)
    r = Result(t["variants"][0])
    r["counters"] = t.get("counters")
    r["run_dir"] = run_dir
    return r


def _normalise(variants):
    """{name: fn or (fn, technique)} -> [(name, fn, technique)], the baseline first when one is named."""
    if not variants:
        raise PerflabError("compare needs at least one variant: {'baseline': f0, 'compiled': torch.compile(f0)}")
    items = []
    for name, spec in variants.items():
        fn, technique = (spec if isinstance(spec, tuple) else (spec, ""))
        if not callable(fn):
            raise TypeError(f"variant {name!r} is not callable")
        items.append((str(name), fn, technique))
    items.sort(key=lambda it: it[0] != "baseline")
    return items


def compare(variants, *args, check=True, reference=None, interleave=True, power_bound=False, mode="hot",
            flops=None, bytes=None, bytes_read=None, bytes_written=None, target="python:compare", summary=None,
            dtype=None, tolerance=None, profile="minimal", host_bound=False, graph=False, stream=None, device=None,
            artifacts_dir="artifacts", show=True, kwargs=None, host=False, **timing):
    """Run {"baseline": f0, "compiled": torch.compile(f0), ...} on the same arguments as one target would: every
    variant verified first against the reference (a tensor, or a callable computing it; default: the baseline's
    output), then timed, in interleaved rounds (A, B, A, B, ...) when interleave is set (power_bound also keeps the
    samples the power cap slows, as perflab run does for power-bound targets); speedups over the baseline with 95%
    bootstrap intervals. Writes a run folder under artifacts_dir (None: none) that `perflab compare`, `perflab report`
    and the expectations read; prints perflab run's table when show is set. check: True (relative L2 error against
    the dtype's tolerance, or `tolerance`), False (unverified), or check(out, ref) -> bool | (bool, message).
    host=True: work on the host (no GPU needed), timed with the host clock."""
    kwargs = kwargs or {}
    items = _normalise(variants)
    stream, dev = _stream_and_device(stream, device)
    verified = check is not False
    ref = None
    if verified:
        ref = _reference_of(reference, None, args, kwargs)
        if ref is None:
            ref = items[0][1](*args, **kwargs)  # the baseline's output is the reference
    custom = check if callable(check) else None
    out_dtype = dtype or (_dtype_name(ref) if ref is not None else None)
    vs = []
    for name, fn, technique in items:
        v = _Variant(name, fn, args, kwargs, technique, custom, tolerance, out_dtype, host_bound)
        v.reference = ref
        vs.append(v)
    if "rounds" not in timing:
        timing["rounds"] = (0 if power_bound else 5) if interleave and len(vs) > 1 else 1
    _sync()
    options = _options(target, summary, mode, profile, dev, flops, bytes_read if bytes is None else bytes,
                       bytes_written, power_bound, graph, artifacts_dir, timing, host)
    t, run_dir, table = _time(vs, options, 0 if host else stream, verified, artifacts_dir)
    result = Comparison(t, run_dir, table)
    if show:
        print(table, end="" if table.endswith("\n") else "\n")
        if run_dir:
            print(f"run folder: {run_dir} (perflab report {run_dir}; perflab compare A B)")
    return result
