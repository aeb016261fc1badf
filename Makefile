# kiln: top-level entry points.  The real build is CMake's, in build/.
#   make         install missing Debian packages, build into build/
#   make run     build, profile the bundled demo, leave kiln-demo.svg
#   make test    build and run the whole suite (ctest), then again under
#                ASan+UBSan in build-asan/
#   make bench   benchmarks against the tools kiln replaces -> bench/RESULTS.md
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build deps test-deps run test test-fast test-asan bench install clean

all: build

deps:
	@scripts/deps.sh build

build: deps
	@cmake -S . -B build -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j $(JOBS)

run: build
	@scripts/demo.sh

test-deps:
	@scripts/deps.sh test

test: test-deps build
	cd build && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-asan

test-fast: build
	cd build && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@cmake -S . -B build-asan -DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS) -LE noasan

bench: test-deps build
	@bench/run.sh

install: build
	@cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan
