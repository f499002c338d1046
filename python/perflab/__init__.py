"""perflab from Python: time any callable with perflab's rules, call perflab's kernels on torch tensors.

    import perflab
    r = perflab.bench(f, x, reference=f_ref(x), flops=2 * m * n * k)   # a Result: r.median_ms, r.stats, r.tflops
    c = perflab.compare({"baseline": f, "compiled": torch.compile(f)}, x)  # verified, interleaved, a run folder
    y = perflab.ops.rms_norm(x, w)                                      # perflab's kernel on torch tensors

`import perflab` needs neither torch nor a GPU; perflab.ops needs torch (imported on first use). The timing and the
kernels live in libperflab.so (built by `make`), found at $PERFLAB_LIB, beside this package, or in the repository's
build/. docs/python.md has the guide.
"""
from ._lib import LibraryNotFound
from ._timing import Comparison, NoGPU, PerflabError, Result, bench, compare

__all__ = ["bench", "compare", "ops", "Result", "Comparison", "PerflabError", "NoGPU", "LibraryNotFound",
           "library_version"]


def library_version():
    """The perflab version and commit libperflab.so was built from."""
    from . import _lib
    return _lib.lib().pl_py_version().decode()


def __getattr__(name):
    if name == "ops":  # needs torch: imported when first asked for, so that `import perflab` works without it
        import importlib
        return importlib.import_module(".ops", __name__)
    raise AttributeError(f"module 'perflab' has no attribute {name!r}")
