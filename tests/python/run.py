#!/usr/bin/env python3
"""ctest's entry to the Python tests: `run.py host` runs the tests not marked gpu, `run.py gpu` those marked gpu and
exits 77 (ctest's skip) when every one of them was skipped, after printing the reasons. Needs pytest (Debian's
python3-pytest, which CI installs); without it, says so and exits 77 too (a GPU machine may lack it)."""
import os
import sys

try:
    import pytest
except ImportError:
    print("SKIP: pytest is not installed for this Python: apt-get install python3-pytest")
    sys.exit(77)


class Outcomes:
    def __init__(self):
        self.passed = self.skipped = self.failed = 0

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed:
            self.passed += 1
        elif report.skipped:
            self.skipped += 1
        elif report.failed:
            self.failed += 1


def main(argv):
    if len(argv) != 1 or argv[0] not in ("host", "gpu"):
        print("usage: run.py host|gpu", file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    o = Outcomes()
    marker = "gpu" if argv[0] == "gpu" else "not gpu"
    rc = pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "-m", marker, here], plugins=[o])
    if argv[0] == "gpu" and rc == 0 and o.passed == 0 and o.skipped > 0:
        print("SKIP: every GPU test of the Python package was skipped (reasons above)")
        return 77
    return int(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
