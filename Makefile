# A thin layer over CMake: `make` builds, `make run` runs the default suite, `make test` runs every test.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
ARGS ?=

ASAN_BUILD ?= build-asan

.PHONY: all build run test test-asan clean deps python

all: build

deps:
	@scripts/install-deps.sh

# Packages are checked when the build is configured, so a configured build (carried to a GPU machine without
# the -dev packages) builds and runs without them.
$(BUILD)/CMakeCache.txt:
	@scripts/install-deps.sh
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The default quick suite on GPU 0; without a GPU it says so in one line and exits 3.
run: build
	./$(BUILD)/perflab run $(ARGS)

# Host tests always; GPU tests run where there is a GPU and are skipped (with the reason shown) elsewhere.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS); rc=$$?; \
	  grep -h '^SKIP' Testing/Temporary/LastTest.log 2>/dev/null | sort -u; exit $$rc

# The host code built again in its own folder with AddressSanitizer and UndefinedBehaviorSanitizer (CUDA objects
# uninstrumented), and the host tests run under it: any report (a leak included) fails its test.
$(ASAN_BUILD)/CMakeCache.txt:
	@scripts/install-deps.sh
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Release -DPERFLAB_SANITIZE=address,undefined,float-cast-overflow

test-asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest -L host --output-on-failure -j $(JOBS)

# The Python package with the library beside it: `pip install ./python` then carries libperflab.so (Debian's pip:
# add --no-build-isolation, and --break-system-packages or a venv made with --system-site-packages). Without
# installing: PYTHONPATH=python (the package finds build/libperflab.so).
python: build
	cp $(BUILD)/libperflab.so python/perflab/libperflab.so

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
