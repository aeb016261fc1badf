#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# ASan's runtime preloaded in front of the agent into programs *not* built
# with ASan, as t706 and t711 do to `timeout` (LD_PRELOAD="libasan.so
# libkiln.so" timeout PROG): ASan then starts in its own constructor,
# after the agent's.  Before it has started, its strdup() answers from
# ASan's internal allocator and its free() of such a pointer ends the
# process (status 0, before main: "__lsan_unregister_root_region():
# region ... has not been registered").  The agent's constructor frees
# what it strdup()s (the debug file cache's folder, KILN_CACHE_DIR), so it
# allocates with malloc() first (src/libkiln/life.c).  Each host here
# must run as it does bare: its output, its exit status, a CPU profile.
. "$(dirname "$0")/lib.sh"
need_agent
need gcc
need timeout
asan=$(gcc -print-file-name=libasan.so)
[ -e "$asan" ] || skip "gcc has no libasan.so"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
mkdir "$T/cache"

# syswrite, then timeout running syswrite (both hosts), each with the
# cache folder set and unset.
n=0
for cache in "$T/cache" ""; do
    for wrap in "" "timeout 300"; do
        n=$((n + 1))
        rc=0
        # shellcheck disable=SC2086
        LD_PRELOAD="$asan $KILN_LIB" KILN_CACHE_DIR=$cache KILN_CPU=$T/c$n.prof \
            $wrap "$WL/syswrite" 0.2 > "$T/out$n" 2> "$T/err$n" || rc=$?
        what="syswrite${wrap:+ under $wrap} (KILN_CACHE_DIR='$cache')"
        [ $rc -eq 0 ] || { cat "$T/err$n" >&2; fail "$what exited $rc"; }
        hasnt "$T/err$n" "__lsan|AddressSanitizer|LeakSanitizer"
        has "$T/out$n" '^burn [0-9.]+ write [0-9.]+$'
        [ -s "$T/c$n.prof" ] || fail "$what wrote no CPU profile"
    done
done
echo ok
