"""perflab's kernels on torch tensors: gemm (bf16 and FP8), grouped_gemm, rms_norm, layer_norm, softmax, flash_attn
(forward) and paged_decode, launched on the current CUDA stream through libperflab.so.

Each function checks its tensors (device, dtype, contiguity, shapes) and raises TypeError or ValueError naming the
argument and the fix; the library checks again and raises KernelError with the kernel family's own message. Each is
a torch.library custom op (perflab::<name>) with a fake implementation, so torch.compile traces through it as one
opaque call (torch 2.4 or later; older torch gets the plain functions).
"""
import ctypes
import math
from typing import Optional

import torch

from . import _lib

__all__ = ["KernelError", "gemm", "grouped_gemm", "rms_norm", "layer_norm", "softmax", "flash_attn", "paged_decode"]


class KernelError(RuntimeError):
    """The library refused the arguments or the launch failed (the message says which and why)."""


def _stream(t):
    return ctypes.c_void_p(torch.cuda.current_stream(t.device).cuda_stream)


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr()) if t is not None else ctypes.c_void_p(0)


def _call(fn, *args):
    err = _lib.error_buffer()
    if fn(*args, err, len(err)) != 0:
        raise KernelError(err.value.decode())


def _need(op, name, t, dtypes, ndim=None, device=None):
    """t is a contiguous CUDA tensor of one of `dtypes` (and `ndim` dimensions, on `device`), else a clear error."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"perflab.ops.{op}: {name} must be a torch.Tensor, not {type(t).__name__}")
    if t.dtype not in dtypes:
        want = " or ".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"perflab.ops.{op}: {name} is {str(t.dtype).replace('torch.', '')}; it takes {want} "
                        f"({name}.to(torch.{str(dtypes[0]).replace('torch.', '')}))")
    if ndim is not None and t.dim() not in ((ndim,) if isinstance(ndim, int) else ndim):
        raise ValueError(f"perflab.ops.{op}: {name} has {t.dim()} dimensions {tuple(t.shape)}; it takes {ndim}")
    if not t.is_contiguous():
        raise ValueError(f"perflab.ops.{op}: {name} is not contiguous (a transposed view or a slice): pass "
                         f"{name}.contiguous()")
    if t.device.type != "cuda":
        raise ValueError(f"perflab.ops.{op}: {name} is on {t.device}; perflab's kernels take CUDA tensors "
                         f"({name}.cuda())")
    if device is not None and t.device != device:
        raise ValueError(f"perflab.ops.{op}: {name} is on {t.device}, the other tensors on {device}: put them on one "
                         "GPU")
    return t


def _shape(op, cond, message):
    if not cond:
        raise ValueError(f"perflab.ops.{op}: {message}")


_BF16 = (torch.bfloat16,)
_FP8 = tuple(d for d in (getattr(torch, "float8_e4m3fn", None),) if d is not None)
_I32 = (torch.int32,)
_F32 = (torch.float32,)

# ---- the kernels (the custom ops' real implementations) ----


def _gemm_impl(a: torch.Tensor, b: torch.Tensor, scale_a: Optional[torch.Tensor], scale_b: Optional[torch.Tensor],
               b_layout: int) -> torch.Tensor:
    k = a.shape[-1]
    m = a.numel() // k
    n = b.shape[0] if b_layout == 0 else b.shape[1]
    d = torch.empty(*a.shape[:-1], n, dtype=torch.bfloat16, device=a.device)
    if a.dtype == torch.bfloat16:
        _call(_lib.lib().pl_py_gemm_bf16, m, n, k, b_layout, _ptr(a), _ptr(b), _ptr(d), _stream(a))
    else:
        block = int(scale_a is not None and scale_a.numel() > 1)
        _call(_lib.lib().pl_py_gemm_fp8, m, n, k, _ptr(a), _ptr(b), _ptr(d), _ptr(scale_a), _ptr(scale_b), block,
              _stream(a))
    return d


def _gemm_fake(a, b, scale_a, scale_b, b_layout):
    n = b.shape[0] if b_layout == 0 else b.shape[1]
    return a.new_empty(*a.shape[:-1], n, dtype=torch.bfloat16)


def _grouped_impl(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor, scale_a: Optional[torch.Tensor],
                  scale_b: Optional[torch.Tensor]) -> torch.Tensor:
    groups, n, k = b.shape
    rows = a.shape[0]
    d = torch.empty(rows, n, dtype=torch.bfloat16, device=a.device)
    fp8 = int(a.dtype != torch.bfloat16)
    _call(_lib.lib().pl_py_grouped_gemm, groups, n, k, rows, _ptr(offsets), _ptr(a), _ptr(b), _ptr(d),
          _ptr(scale_a), _ptr(scale_b), fp8, _stream(a))
    return d


def _grouped_fake(a, b, offsets, scale_a, scale_b):
    return a.new_empty(a.shape[0], b.shape[1], dtype=torch.bfloat16)


def _rms_norm_impl(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    y = torch.empty_like(x)
    cols = x.shape[-1]
    _call(_lib.lib().pl_py_rms_norm, _ptr(x), _ptr(weight), _ptr(y), x.numel() // cols, cols, eps, _stream(x))
    return y


def _layer_norm_impl(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    y = torch.empty_like(x)
    cols = x.shape[-1]
    _call(_lib.lib().pl_py_layer_norm, _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), x.numel() // cols, cols, eps,
          _stream(x))
    return y


def _softmax_impl(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    cols = x.shape[-1]
    _call(_lib.lib().pl_py_softmax, _ptr(x), _ptr(y), x.numel() // cols, cols, _stream(x))
    return y


def _flash_impl(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float,
                layout: int) -> torch.Tensor:
    if layout == 0:
        batch, heads, seq, dim = q.shape
        kv_heads = k.shape[1]
    else:
        batch, seq, heads, dim = q.shape
        kv_heads = k.shape[2]
    o = torch.empty_like(q)
    lse = torch.empty(batch, heads, seq, dtype=torch.float32, device=q.device)
    _call(_lib.lib().pl_py_flash_attn, batch, heads, kv_heads, seq, dim, int(causal), layout, scale, _ptr(q),
          _ptr(k), _ptr(v), _ptr(o), _ptr(lse), _stream(q))
    return o


def _decode_impl(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
                 seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    batch, heads, dim = q.shape
    page_size, kv_heads = k_cache.shape[1], k_cache.shape[2]
    max_pages = block_table.shape[1]
    library = _lib.lib()
    ws_bytes = library.pl_py_paged_decode_workspace_bytes(batch, heads, kv_heads, dim, page_size, max_pages,
                                                          q.device.index or 0)
    workspace = torch.empty(max(ws_bytes, 1) + 256, dtype=torch.uint8, device=q.device)
    base = workspace.data_ptr()
    aligned = (base + 255) // 256 * 256
    o = torch.empty_like(q)
    _call(library.pl_py_paged_decode, batch, heads, kv_heads, dim, page_size, max_pages, scale, _ptr(q),
          _ptr(k_cache), _ptr(v_cache), _ptr(block_table), _ptr(seq_lens), _ptr(o), ctypes.c_void_p(aligned),
          ws_bytes, _stream(q))
    return o


def _rms_norm_fake(x, weight, eps):
    return torch.empty_like(x)


def _layer_norm_fake(x, weight, bias, eps):
    return torch.empty_like(x)


def _softmax_fake(x):
    return torch.empty_like(x)


def _flash_fake(q, k, v, causal, scale, layout):
    return torch.empty_like(q)


def _decode_fake(q, k_cache, v_cache, block_table, seq_lens, scale):
    return torch.empty_like(q)


# ---- registered as torch.library custom ops where this torch has them ----

def _register(name, impl, fake):
    custom_op = getattr(getattr(torch, "library", None), "custom_op", None)
    if custom_op is None:
        return impl
    op = custom_op(f"perflab::{name}", mutates_args=())(impl)
    op.register_fake(fake)
    return op


_gemm_op = _register("gemm", _gemm_impl, _gemm_fake)
_grouped_op = _register("grouped_gemm", _grouped_impl, _grouped_fake)
_rms_norm_op = _register("rms_norm", _rms_norm_impl, _rms_norm_fake)
_layer_norm_op = _register("layer_norm", _layer_norm_impl, _layer_norm_fake)
_softmax_op = _register("softmax", _softmax_impl, _softmax_fake)
_flash_op = _register("flash_attn", _flash_impl, _flash_fake)
_decode_op = _register("paged_decode", _decode_impl, _decode_fake)
REGISTERED = getattr(getattr(torch, "library", None), "custom_op", None) is not None

# ---- the public functions: argument checks, then the op ----

_LAYOUTS = {"nk": 0, "kn": 1}


def gemm(a, b, scale_a=None, scale_b=None, b_layout="nk"):
    """D = A·B in bf16 (fp32 accumulation): A [..., K]; B [N, K] ("nk", a linear layer's weight: a @ b.T) or [K, N]
    ("kn": a @ b). bf16 operands: the heuristic's pick of perflab's kernels. FP8 (torch.float8_e4m3fn) operands, B
    [N, K], Hopper: scale_a and scale_b are fp32 tensors of one element each (tensor scaling; None reads as 1), or
    the block scales (A 1×128, B 128×128) in kernels/gemm/fp8.h's layouts."""
    op = "gemm"
    _need(op, "a", a, _BF16 + _FP8, ndim=(2, 3, 4))
    _need(op, "b", b, (a.dtype,), ndim=2, device=a.device)
    if b_layout not in _LAYOUTS:
        raise ValueError(f"perflab.ops.gemm: b_layout {b_layout!r}: 'nk' (B is N×K) or 'kn' (B is K×N)")
    layout = _LAYOUTS[b_layout]
    k_b = b.shape[1] if layout == 0 else b.shape[0]
    _shape(op, a.shape[-1] == k_b, f"a's K ({a.shape[-1]}) differs from b's ({k_b}) with b_layout '{b_layout}'")
    if a.dtype != torch.bfloat16:
        _shape(op, layout == 0, "FP8 takes B as [N, K] (b_layout 'nk')")
        for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
            if s is not None:
                _need(op, name, s, _F32, device=a.device)
        _shape(op, (scale_a is None) == (scale_b is None) or scale_a is None or scale_a.numel() == 1,
               "block scaling needs both scale_a and scale_b")
    elif scale_a is not None or scale_b is not None:
        raise ValueError("perflab.ops.gemm: scales are for FP8 operands; bf16 takes none")
    return _gemm_op(a, b, scale_a, scale_b, layout)


def grouped_gemm(a, b, offsets, scale_a=None, scale_b=None):
    """Mixture-of-experts GEMM: rows offsets[g]..offsets[g+1]-1 of A [rows, K] times B[g] ([G, N, K]) into the same
    rows of D [rows, N] (bf16), one launch. offsets: G+1 int32 on the GPU (0, ..., rows). FP8: A and B
    float8_e4m3fn with block scales (kernels/gemm/grouped.h). Hopper only."""
    op = "grouped_gemm"
    _need(op, "a", a, _BF16 + _FP8, ndim=2)
    _need(op, "b", b, (a.dtype,), ndim=3, device=a.device)
    _need(op, "offsets", offsets, _I32, ndim=1, device=a.device)
    _shape(op, a.shape[1] == b.shape[2], f"a's K ({a.shape[1]}) differs from b's ({b.shape[2]})")
    _shape(op, offsets.shape[0] == b.shape[0] + 1, f"offsets has {offsets.shape[0]} entries; {b.shape[0]} groups need "
           f"{b.shape[0] + 1}")
    if a.dtype != torch.bfloat16:
        _shape(op, scale_a is not None and scale_b is not None, "FP8 needs the block scales scale_a and scale_b")
        _need(op, "scale_a", scale_a, _F32, device=a.device)
        _need(op, "scale_b", scale_b, _F32, device=a.device)
    return _grouped_op(a, b, offsets, scale_a, scale_b)


def _row_op(op, x, **named):
    _need(op, "x", x, _BF16)
    _shape(op, x.dim() >= 1 and x.numel() > 0, f"x of shape {tuple(x.shape)} has no rows")
    for name, t in named.items():
        _need(op, name, t, _BF16, ndim=1, device=x.device)
        _shape(op, t.shape[0] == x.shape[-1], f"{name} has {t.shape[0]} elements; x's rows have {x.shape[-1]}")


def rms_norm(x, weight, eps=1e-6):
    """y = x / sqrt(mean(x²) + eps) · weight over the last dimension (bf16, fp32 arithmetic): one fused pass."""
    _row_op("rms_norm", x, weight=weight)
    return _rms_norm_op(x, weight, float(eps))


def layer_norm(x, weight, bias=None, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) · weight + bias over the last dimension (biased variance, as PyTorch)."""
    if bias is None:
        bias = torch.zeros_like(weight) if isinstance(weight, torch.Tensor) else weight
    _row_op("layer_norm", x, weight=weight, bias=bias)
    return _layer_norm_op(x, weight, bias, float(eps))


def softmax(x, dim=-1):
    """softmax over the last dimension of a bf16 tensor (fp32 arithmetic): online, one read of x."""
    if dim not in (-1, x.dim() - 1 if isinstance(x, torch.Tensor) else -1):
        raise ValueError("perflab.ops.softmax: only the last dimension (dim=-1); move it there with .transpose()."
                         "contiguous()")
    _row_op("softmax", x)
    return _softmax_op(x)


def flash_attn(q, k, v, causal=False, scale=None, layout="bhsd"):
    """O = softmax(scale · Q·Kᵀ (+ causal mask)) · V, bf16. layout "bhsd": q [batch, heads, seq, dim], k and v
    [batch, kv_heads, seq, dim] (grouped-query attention when kv_heads < heads); "bshd": [batch, seq, heads, dim].
    head_dim 64, 128 or 256; scale defaults to 1/sqrt(dim). Forward only."""
    op = "flash_attn"
    _need(op, "q", q, _BF16, ndim=4)
    _need(op, "k", k, _BF16, ndim=4, device=q.device)
    _need(op, "v", v, _BF16, ndim=4, device=q.device)
    if layout not in ("bhsd", "bshd"):
        raise ValueError(f"perflab.ops.flash_attn: layout {layout!r}: 'bhsd' or 'bshd'")
    _shape(op, k.shape == v.shape, f"k {tuple(k.shape)} and v {tuple(v.shape)} differ")
    hd = 1 if layout == "bhsd" else 2
    sd = 2 if layout == "bhsd" else 1
    _shape(op, q.shape[0] == k.shape[0] and q.shape[sd] == k.shape[sd] and q.shape[3] == k.shape[3],
           f"q {tuple(q.shape)} and k {tuple(k.shape)} differ in batch, seq or head_dim ({layout})")
    _shape(op, q.shape[3] in (64, 128, 256), f"head_dim {q.shape[3]}: 64, 128 or 256")
    _shape(op, q.shape[hd] % k.shape[hd] == 0, f"heads ({q.shape[hd]}) must be a multiple of kv_heads ({k.shape[hd]})")
    scale = 1.0 / math.sqrt(q.shape[3]) if scale is None else float(scale)
    return _flash_op(q, k, v, bool(causal), scale, 0 if layout == "bhsd" else 1)


def paged_decode(q, k_cache, v_cache, block_table, seq_lens, scale=None):
    """One new token per sequence against a paged KV cache: q [batch, heads, dim]; caches [pages, page_size,
    kv_heads, dim] (the flash-attn/FlashInfer NHD page layout); block_table [batch, max_pages] int32; seq_lens
    [batch] int32. Returns o [batch, heads, dim]."""
    op = "paged_decode"
    _need(op, "q", q, _BF16, ndim=3)
    _need(op, "k_cache", k_cache, _BF16, ndim=4, device=q.device)
    _need(op, "v_cache", v_cache, _BF16, ndim=4, device=q.device)
    _need(op, "block_table", block_table, _I32, ndim=2, device=q.device)
    _need(op, "seq_lens", seq_lens, _I32, ndim=1, device=q.device)
    _shape(op, k_cache.shape == v_cache.shape, f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)} "
           "differ")
    _shape(op, k_cache.shape[3] == q.shape[2], f"the caches' head_dim ({k_cache.shape[3]}) differs from q's "
           f"({q.shape[2]})")
    _shape(op, block_table.shape[0] == q.shape[0] and seq_lens.shape[0] == q.shape[0],
           f"block_table {tuple(block_table.shape)} and seq_lens {tuple(seq_lens.shape)} need batch {q.shape[0]} rows")
    scale = 1.0 / math.sqrt(q.shape[2]) if scale is None else float(scale)
    return _decode_op(q, k_cache, v_cache, block_table, seq_lens, scale)
