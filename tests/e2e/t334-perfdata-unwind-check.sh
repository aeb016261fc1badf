#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --call-graph dwarf perf.data files are unwound from cached CFI rows
# (session/unwind.c's fast path) where the rows are simple, by libdwfl
# elsewhere.  KILN_UNWIND_CHECK=1 unwinds every sample both ways and says
# so on stderr where they differ: on programs with PLT stubs, system calls
# (kernel entry in libc), JIT code without CFI, threads and a fork+exec,
# they never do.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf

# jit-nofp removes its /tmp/perf-PID.map at the end (rm): one left behind
# names a later process that gets the same PID (kiln record in t514 read
# such a stale map at that process's start and then missed the new one,
# of the same size).
i=0
for cmd in "shares-nofp 0.5" "pltcall-nofp 0.5" "syswrite-nofp 0.5" \
    "jit-nofp 0.5 rm" "threads-nofp 0.3" "forkexec-nofp $WL/shares-nofp 0.3"; do
    i=$((i + 1))
    set -- $cmd
    prog=$1; shift
    perf_record -q -F 999 --call-graph dwarf -o "$T/$i.data" -- "$WL/$prog" "$@" \
        >/dev/null 2>&1 || fail "perf record --call-graph dwarf $prog failed"
    KILN_UNWIND_CHECK=1 "$KILN" convert -q "$T/$i.data" -o "$T/$i.collapsed" \
        2>"$T/$i.err" || fail "kiln convert of $prog's perf.data failed: $(tail -2 "$T/$i.err")"
    if grep -q 'unwind check' "$T/$i.err"; then
        head -5 "$T/$i.err" >&2
        fail "$prog: the fast unwinder and libdwfl differ ($(grep -c 'unwind check' "$T/$i.err") samples)"
    fi
    [ -s "$T/$i.collapsed" ] || fail "$prog: no stacks"
done
exit 0
