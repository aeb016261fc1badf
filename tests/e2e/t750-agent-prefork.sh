#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Pre-fork servers profiled in-process (issue 22): with KILN_CPU_CHILDREN=1
# each worker that the prefork workload's master fork()s (no exec, as
# nginx, postgres and gunicorn do) profiles itself into PATH.PID, its
# main thread (prefork_work) and the thread it starts (prefork_thread_work)
# with the worker's pid label, and the master's PATH has neither.  Without
# the variable (the default) a forked child writes nothing, as before; a
# bad value is said and ignored.
. "$(dirname "$0")/lib.sh"
need_agent
need go
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local

LD_PRELOAD=$KILN_LIB KILN_CPU=$T/p.prof KILN_CPU_CHILDREN=1 \
    "$WL/prefork" 3 0.5 > "$T/out" 2> "$T/err" || { cat "$T/err"; fail "prefork failed"; }
has "$T/out" "^done$"
[ -s "$T/p.prof" ] || fail "no profile of the master"
"$KILN" top -n 0 "$T/p.prof" > "$T/master.txt"
hasnt "$T/master.txt" "prefork_work"
n=0
for pid in $(awk '$1 == "worker" { print $2 }' "$T/out"); do
    n=$((n + 1))
    f=$T/p.prof.$pid
    [ -s "$f" ] || { ls "$T"; fail "no profile of worker $pid ($f)"; }
    "$KILN" top -n 0 "$f" > "$T/w.txt"
    for fn in prefork_work prefork_thread_work; do
        c=$(cum_pct "$T/w.txt" $fn)
        # Each burns the same CPU time: about half each (>= 30%).
        awk -v c="${c:-0}" 'BEGIN { exit !(c >= 30) }' ||
            { cat "$T/w.txt"; fail "worker $pid: $fn at ${c:-no}%"; }
    done
    go tool pprof -tags "$f" > "$T/tags.txt" 2>/dev/null || fail "go tool pprof -tags $f"
    has "$T/tags.txt" "^ *pid:"
    awk '/^ *pid:/ { on = 1; next } on && /%\)/ { print $NF } on && /^$/ { exit }' "$T/tags.txt" > "$T/pids"
    [ "$(cat "$T/pids")" = "$pid" ] || { cat "$T/tags.txt"; fail "worker $pid: pid labels $(cat "$T/pids")"; }
done
[ $n -eq 3 ] || fail "$n workers listed, want 3"
ls "$T"/p.prof.* | wc -l | grep -qx 3 || { ls "$T"; fail "other files than the workers' 3"; }

# The default: a forked child runs no profile and writes no file.
mkdir "$T/d"
LD_PRELOAD=$KILN_LIB KILN_CPU=$T/d/p.prof "$WL/prefork" 2 0.2 > "$T/out2" 2> "$T/err2" ||
    { cat "$T/err2"; fail "prefork failed (default)"; }
[ -s "$T/d/p.prof" ] || fail "no profile of the master (default)"
[ "$(ls "$T/d")" = "p.prof" ] || { ls "$T/d"; fail "files of children without KILN_CPU_CHILDREN"; }

# A bad value: said, and the default kept.
mkdir "$T/b"
LD_PRELOAD=$KILN_LIB KILN_CPU=$T/b/p.prof KILN_CPU_CHILDREN=yes "$WL/prefork" 1 0.1 \
    > /dev/null 2> "$T/err3" || fail "prefork failed (bad value)"
has "$T/err3" "bad KILN_CPU_CHILDREN 'yes'"
[ "$(ls "$T/b")" = "p.prof" ] || { ls "$T/b"; fail "files of children with a bad KILN_CPU_CHILDREN"; }

echo ok
