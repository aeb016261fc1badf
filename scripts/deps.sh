#!/usr/bin/env bash
# Installs the Debian packages kiln needs to build, test and benchmark, when
# any is missing.  Called by `make`; safe to run again (does nothing then).
# Usage: scripts/deps.sh [build|test|all]   (default: all)
set -eu

what=${1:-all}

build_pkgs="cmake make gcc g++ pkg-config libdw-dev libelf-dev
  libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libzstd-dev
  libmicrohttpd-dev libunwind-dev libiberty-dev libcmocka-dev libxxhash-dev
  libgraphviz-dev libjansson-dev libcurl4-openssl-dev"
# Tools the tests compare kiln with or drive: go tool pprof, perf,
# gperftools' libprofiler, heaptrack, jemalloc, headless chromium;
# graphviz (dot) for `go tool pprof -svg` and GNU time for peak RSS in bench/;
# the linkers and the Rust compiler of the toolchain matrix (t515, t516).
test_pkgs="golang-go linux-perf google-perftools libgoogle-perftools-dev
  heaptrack libjemalloc-dev chromium nodejs npm curl valgrind hyperfine
  graphviz time lld mold rustc"

case $what in
build) want=$build_pkgs ;;
test|all) want="$build_pkgs $test_pkgs" ;;
*) echo "usage: $0 [build|test|all]" >&2; exit 2 ;;
esac

missing=
for p in $want; do
    # nodejs from another origin may provide npm itself.
    if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then
        continue
    fi
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        missing="$missing $p"
    fi
done

if [ -n "$missing" ]; then
    echo "deps: installing:$missing" >&2
    sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing >&2
fi

# playwright-core drives Debian's chromium in the browser tests; speedscope
# (its offline release) is a viewer bench/serve.sh compares kiln serve with;
# tests/firefox holds the Firefox Profiler's loader.
if [ "$what" != build ]; then
    here=$(cd "$(dirname "$0")/.." && pwd)
    if [ -f "$here/tests/browser/package.json" ] &&
       { [ ! -d "$here/tests/browser/node_modules/playwright-core" ] ||
         [ ! -d "$here/tests/browser/node_modules/speedscope" ]; }; then
        (cd "$here/tests/browser" && npm install --no-audit --no-fund --silent >&2)
    fi
    # The Firefox Profiler's own loading code (its profiler-cli) for the
    # tests of kiln convert --to firefox (e2e t320).
    if [ -f "$here/tests/firefox/package.json" ] &&
       [ ! -d "$here/tests/firefox/node_modules/@firefox-devtools/profiler-cli" ]; then
        (cd "$here/tests/firefox" && npm install --no-audit --no-fund --silent >&2)
    fi
fi
exit 0
