"""The Python package's tests: host parts (no GPU, no torch needed) and GPU parts (marked gpu; skipped with the reason
where there is no GPU or no torch). run.py runs them for ctest with the library and the binary of the build."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
sys.path.insert(0, os.path.join(REPO, "python"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a GPU (and torch where it says so); skipped with the reason without")


@pytest.fixture(scope="session")
def perflab_bin():
    path = os.environ.get("PERFLAB_BIN", os.path.join(REPO, "build", "perflab"))
    if not os.path.isfile(path):
        pytest.fail(f"no perflab binary at {path}: build it (make) or set PERFLAB_BIN")
    return path


def run_perflab(binary, *args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([binary, *args], capture_output=True, text=True, env=e, timeout=600)


@pytest.fixture(scope="session")
def torch_gpu():
    """torch with a usable GPU, or the test is skipped saying which is missing."""
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed (the GPU tests run on a machine with torch and a GPU)")
    if not torch.cuda.is_available():
        pytest.skip("torch finds no usable GPU")
    return torch
