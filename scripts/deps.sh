#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages kiln needs to build, test and benchmark, when
# any is missing.  Called by `make`; safe to run again (does nothing then).
# Usage: scripts/deps.sh [build|deb|test|all]   (default: all)
# (deb: what make deb needs besides the build: dpkg-shlibdeps, file)
set -eu

what=${1:-all}

build_pkgs="cmake make gcc g++ pkg-config libdw-dev libelf-dev
  libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libzstd-dev
  libmicrohttpd-dev libunwind-dev libiberty-dev libcmocka-dev libxxhash-dev
  libgraphviz-dev libjansson-dev libcurl4-openssl-dev libcapstone-dev"
# Tools the tests compare kiln with or drive: go tool pprof, perf,
# gperftools' libprofiler, heaptrack, jemalloc, headless chromium;
# graphviz (dot) for `go tool pprof -svg` and GNU time for peak RSS in bench/;
# the linkers and the Rust compiler of the toolchain matrix (t515, t516);
# clang for make test-fuzz (libFuzzer, the unit tests under clang) and
# t518 (source lines of a clang build);
# the packaging tests' tools (t340-t345): dpkg-deb and dpkg-shlibdeps,
# man and groff (man -l, col), lintian, bash-completion and zsh;
# Debian's nginx, a real pre-fork server (t526, t752, t753, t839: each
# runs its own master, prefix, configuration and port, never the
# system's service, which is not started when it is installed here);
# procps (ps, pgrep) for the tests that find a server's workers.
test_pkgs="golang-go linux-perf google-perftools libgoogle-perftools-dev
  heaptrack libjemalloc-dev chromium nodejs npm curl valgrind hyperfine
  graphviz time lld mold rustc clang
  dpkg-dev man-db groff-base bsdextrautils lintian bash-completion zsh
  nginx-light procps"

deb_pkgs="dpkg-dev file"

case $what in
build) want=$build_pkgs ;;
deb) want="$build_pkgs $deb_pkgs" ;;
test|all) want="$build_pkgs $deb_pkgs $test_pkgs" ;;
*) echo "usage: $0 [build|deb|test|all]" >&2; exit 2 ;;
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
    # A package's service (nginx's) is not started by its installation:
    # it would take port 80, and its postinst fails the whole install
    # where it cannot start.  policy-rc.d answering 101 ("action
    # forbidden") is Debian's way (invoke-rc.d, deb-systemd-invoke); one
    # the machine already has is left alone.
    policy=/usr/sbin/policy-rc.d
    if [ ! -e $policy ]; then
        # (removed again however the install ends)
        trap '$sudo rm -f $policy' EXIT
        printf '#!/bin/sh\nexit 101\n' | $sudo tee $policy > /dev/null
        $sudo chmod 755 $policy
    fi
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing >&2
fi

# playwright-core drives Debian's chromium in the browser tests; speedscope
# (its offline release) is a viewer bench/serve.sh compares kiln serve with;
# tests/firefox holds the Firefox Profiler's loader.
if [ "$what" != build ] && [ "$what" != deb ]; then
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
