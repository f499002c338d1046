#!/usr/bin/env bash
# Installs what the build needs from Debian/Ubuntu packages when it is missing: CMake, the jansson and Check
# static archives (the binaries carry them), pkg-config. The CUDA toolkit is expected in /usr/local/cuda.
set -euo pipefail

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
[ -f /usr/include/jansson.h ] && ls /usr/lib/*/libjansson.a >/dev/null 2>&1 || missing+=(libjansson-dev)
[ -f /usr/include/check.h ] && ls /usr/lib/*/libcheck.a >/dev/null 2>&1 || missing+=(check)
ls /usr/lib/*/libsubunit.a >/dev/null 2>&1 || missing+=(libsubunit-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v python3 >/dev/null 2>&1 || missing+=(python3) # scripts/check_layout.py, a host test
[ -d /usr/lib/python3/dist-packages/pytest ] || missing+=(python3-pytest) # the Python package's tests
# the report's tests: expat parses every HTML/SVG file, zlib reads the headless-Chromium screenshot (chromium itself
# is optional: that test skips without it)
[ -f /usr/include/expat.h ] && ls /usr/lib/*/libexpat.a >/dev/null 2>&1 || missing+=(libexpat1-dev)
[ -f /usr/include/zlib.h ] && ls /usr/lib/*/libz.a >/dev/null 2>&1 || missing+=(zlib1g-dev)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "perflab: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo=sudo; else
    echo "perflab: missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root" >&2
    exit 1
  fi
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "perflab: nvcc not found: install the CUDA toolkit (12.8 or newer) in /usr/local/cuda" >&2
  exit 1
fi
