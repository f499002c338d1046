"""libperflab.so through ctypes: where it is found, and the structs of include/perflab/py.h.

The library is looked for at $PERFLAB_LIB, then beside this package (where `make python` puts it and
`pip install ./python` carries it), then in the repository's build/ folder (a checkout used with PYTHONPATH=python).
Nothing is compiled at import.
"""
import ctypes
import os

API_VERSION = 1  # PL_PY_API_VERSION of the header these structs copy

_HERE = os.path.dirname(os.path.abspath(__file__))
_CANDIDATES = (
    os.path.join(_HERE, "libperflab.so"),
    os.path.join(_HERE, os.pardir, os.pardir, "build", "libperflab.so"),
)


class LibraryNotFound(ImportError):
    """libperflab.so is neither at $PERFLAB_LIB, beside the package, nor in the repository's build/."""


class PyCheck(ctypes.Structure):
    """pl_py_check."""
    _fields_ = [("verdict", ctypes.c_int), ("rel_l2_error", ctypes.c_double), ("max_abs_error", ctypes.c_double),
                ("elements", ctypes.c_ulonglong), ("nonfinite", ctypes.c_ulonglong), ("message", ctypes.c_char * 256)]


RUN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
CHECK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(PyCheck))


class PyVariant(ctypes.Structure):
    """pl_py_variant."""
    _fields_ = [("size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("technique", ctypes.c_char_p),
                ("run", RUN_FN), ("check", CHECK_FN), ("user", ctypes.c_void_p), ("dtype", ctypes.c_char_p),
                ("tolerance", ctypes.c_double), ("host_bound", ctypes.c_int)]


class PyOptions(ctypes.Structure):
    """pl_py_options."""
    _fields_ = [("size", ctypes.c_size_t), ("target", ctypes.c_char_p), ("summary", ctypes.c_char_p),
                ("mode", ctypes.c_char_p), ("profile", ctypes.c_char_p), ("device", ctypes.c_int),
                ("iterations", ctypes.c_int), ("warmup", ctypes.c_int), ("min_samples", ctypes.c_int),
                ("min_time_s", ctypes.c_double), ("max_time_s", ctypes.c_double), ("max_noise", ctypes.c_double),
                ("throttle_threshold", ctypes.c_double), ("rounds", ctypes.c_int), ("power_bound", ctypes.c_int),
                ("graph", ctypes.c_int), ("seed", ctypes.c_ulonglong), ("flops", ctypes.c_double),
                ("bytes_read", ctypes.c_double), ("bytes_written", ctypes.c_double),
                ("artifacts_dir", ctypes.c_char_p), ("host", ctypes.c_int)]


def _declare(lib):
    c_int, c_size_t, c_void_p, c_char_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p
    c_float, err = ctypes.c_float, [ctypes.c_char_p, ctypes.c_size_t]
    sig = {
        "pl_py_api_version": (c_int, []),
        "pl_py_version": (c_char_p, []),
        "pl_py_free": (None, [c_void_p]),
        "pl_py_options_init": (None, [ctypes.POINTER(PyOptions)]),
        "pl_py_time": (c_void_p, [ctypes.POINTER(PyOptions), ctypes.POINTER(PyVariant), c_size_t, c_void_p] + err),
        "pl_py_result_json": (c_void_p, [c_void_p]),
        "pl_py_result_exit_code": (c_int, [c_void_p]),
        "pl_py_result_write": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, c_size_t] + err),
        "pl_py_result_table": (c_void_p, [c_void_p]),
        "pl_py_result_free": (None, [c_void_p]),
        "pl_py_gemm_bf16": (c_int, [c_int] * 4 + [c_void_p] * 4 + err),
        "pl_py_gemm_fp8": (c_int, [c_int] * 3 + [c_void_p] * 5 + [c_int, c_void_p] + err),
        "pl_py_grouped_gemm": (c_int, [c_int] * 4 + [c_void_p] * 6 + [c_int, c_void_p] + err),
        "pl_py_grouped_gemm_supports": (c_int, [c_int] * 4 + [c_void_p] * 4 + [c_int] + err),
        "pl_py_rms_norm": (c_int, [c_void_p] * 3 + [c_int, c_int, c_float, c_void_p] + err),
        "pl_py_layer_norm": (c_int, [c_void_p] * 4 + [c_int, c_int, c_float, c_void_p] + err),
        "pl_py_softmax": (c_int, [c_void_p] * 2 + [c_int, c_int, c_void_p] + err),
        "pl_py_flash_attn": (c_int, [c_int] * 7 + [c_float] + [c_void_p] * 6 + err),
        "pl_py_paged_decode_workspace_bytes": (c_size_t, [c_int] * 7),
        "pl_py_paged_decode": (c_int, [c_int] * 6 + [c_float] + [c_void_p] * 7 + [c_size_t, c_void_p] + err),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def find():
    """The path of libperflab.so, or LibraryNotFound saying where it was looked for and how to build it."""
    given = os.environ.get("PERFLAB_LIB")
    if given:
        if not os.path.isfile(given):
            raise LibraryNotFound(f"PERFLAB_LIB={given} is not a file: point it at build/libperflab.so (built by make)")
        return given
    for path in _CANDIDATES:
        if os.path.isfile(path):
            return os.path.normpath(path)
    raise LibraryNotFound("libperflab.so not found beside the package nor in the repository's build/: build it with "
                          "`make` and set PERFLAB_LIB=build/libperflab.so, or run `make python` before "
                          "`pip install ./python`")


_lib = None


def lib():
    """The loaded library (loaded once, on first use)."""
    global _lib
    if _lib is None:
        loaded = _declare(ctypes.CDLL(find()))
        have = loaded.pl_py_api_version()
        if have != API_VERSION:
            raise LibraryNotFound(f"{find()} speaks API version {have}, this package {API_VERSION}: rebuild the "
                                  "library and the package from the same checkout")
        _lib = loaded
    return _lib


def take_string(ptr):
    """A malloc'd C string from the library, as str (freed)."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode()
    finally:
        lib().pl_py_free(ptr)


def error_buffer():
    return ctypes.create_string_buffer(1024)
