# A thin layer over CMake: `make` builds, `make run` runs the default suite, `make test` runs every test.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
ARGS ?=

.PHONY: all build run test clean deps

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

clean:
	rm -rf $(BUILD)
