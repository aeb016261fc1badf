#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln doctor -p PID and -- CMD: the process's JIT code (anonymous
# executable memory) with and without /tmp/perf-PID.map (the jit
# workload), perf_event_open tried on the process, its program and
# mapped libraries examined; the allocator (jemalloc shared or linked in);
# a command run to its end; usage errors (exit 2).
. "$(dirname "$0")/lib.sh"
need python3
[ "$(uname -m)" = x86_64 ] || skip "the jit workload is x86-64 only"
row() { python3 "$KILN_SRC/tests/e2e/doctor-row.py" "$@"; }
# A process without problems exits 0, unless the machine has one: then 1.
"$KILN" doctor --json > "$T/m.json" || [ $? -eq 1 ] || fail "kiln doctor failed"
clean=$(python3 -c 'import json,sys; print(1 if json.load(open(sys.argv[1]))["problems"] else 0)' "$T/m.json")
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null; rm -f "/tmp/perf-$p.map"; done; rm -rf "$T"' EXIT

# JIT code before its perf map is written ("late": the map comes after
# half of 600 s of CPU time): a warning naming the missing map.
"$WL/jit" 600 late & late=$!
pids="$pids $late"
jit_unnamed() {
    "$KILN" doctor --json -p "$late" > "$T/late.json" || [ $? -eq 1 ] || return 1
    row "$T/late.json" jit-maps "pid $late" > "$T/late.row" &&
        grep -q "^warn	4 KiB of anonymous executable memory in 1 mappings (JIT code) and no /tmp/perf-$late.map" "$T/late.row"
}
wait_for "the jit workload's code mapped" jit_unnamed
grep -q -- "--perf-basic-prof" "$T/late.row" || fail "no fix for the missing map: $(cat "$T/late.row")"
r=$(row "$T/late.json" perf_event_open "pid $late") || fail "no perf_event_open row for the process"
if [ "$clean" -eq 0 ]; then
    case $r in ok$'\t'"works: a cpu-clock sampling event opened on pid $late"*) ;; *) fail "perf_event_open on the process: $r";; esac
fi
python3 -c 'import json,sys
r=[x for x in json.load(open(sys.argv[1]))["rows"] if x["check"]=="jit-maps"]
assert r and r[0]["applies_to"]=="process", r' "$T/late.json" || fail "jit-maps does not apply to the process"
row "$T/late.json" frame-pointers /workloads/jit >/dev/null || fail "the process's program not examined"
row "$T/late.json" frame-pointers /libc.so.6 >/dev/null || fail "the process's libraries not examined"
kill "$late"

# With its map: named.
"$WL/jit" 600 rm & named=$!
pids="$pids $named"
wait_for "/tmp/perf-$named.map" test -s "/tmp/perf-$named.map"
expect_status "$clean" "$KILN" doctor --json -p "$named"
r=$(row "$T/out" jit-maps "pid $named") || fail "no jit-maps row"
case $r in ok$'\t'"/tmp/perf-$named.map names its JIT code (4 KiB of anonymous executable memory in 1 mappings)"*) ;;
*) fail "jit-maps with the map: $r";; esac
kill "$named"

# No JIT code at all.
"$WL/shares" 600 >/dev/null 2>&1 & plain=$!
pids="$pids $plain"
runs_shares() { case $(readlink "/proc/$plain/exe") in */shares) return 0;; esac; return 1; }
wait_for "the shares workload" runs_shares
expect_status "$clean" "$KILN" doctor --json -p "$plain"
r=$(row "$T/out" jit-maps "pid $plain")
case $r in ok$'\t'"no JIT code"*) ;; *) fail "jit-maps without JIT: $r";; esac
# A map left by an earlier process of that pid names nothing: still no
# JIT code (a suite that ran node once left 57 such maps in /tmp).
[ -e "/tmp/perf-$plain.map" ] || { echo "0 10 stale" > "/tmp/perf-$plain.map"; stale=$plain; }
expect_status "$clean" "$KILN" doctor --json -p "$plain"
r=$(row "$T/out" jit-maps "pid $plain")
case $r in ok$'\t'"no JIT code: no anonymous executable memory (/tmp/perf-$plain.map is there"*) ;;
*) fail "jit-maps with a stale map: $r";; esac
[ -z "${stale:-}" ] || rm -f "/tmp/perf-$stale.map"
kill "$plain"

# Another user's process (kiln as nobody, the workload root's): refused,
# and said why; its program cannot be read.  (Where perf_event_paranoid
# is 3 the sysctl is blamed first: t941.)
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
   [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 2 ]; then
    "$WL/shares" 600 >/dev/null 2>&1 & plain=$!
    pids="$pids $plain"
    wait_for "the shares workload" runs_shares
    chmod 755 "$T"
    rc=0
    setpriv --reuid=65534 --regid=65534 --clear-groups "$KILN" doctor --json -p "$plain" > "$T/other.json" || rc=$?
    [ "$rc" -eq 1 ] || fail "kiln doctor as nobody on root's process: exit $rc, expected 1"
    r=$(row "$T/other.json" perf_event_open "pid $plain")
    case $r in problem$'\t'"refused (Permission denied) for pid $plain: it belongs to another user"*) ;;
    *) fail "another user's process: $r";; esac
    r=$(row "$T/other.json" program "pid $plain")
    case $r in skip$'\t'"the program of pid $plain cannot be read"*) ;; *) fail "another user's program: $r";; esac
    kill "$plain"
fi

# A command run to its end: its program and libraries, its JIT map
# (written and left behind by the workload), the table on stdout after
# the command's own output.
expect_status "$clean" "$KILN" doctor --json -- "$WL/jit" 0.05
jpid=$(python3 -c 'import json,sys
print(next(r["subject"][4:] for r in json.load(open(sys.argv[1]))["rows"] if r["check"]=="jit-maps"))' "$T/out") ||
    fail "no jit-maps row for the command"
pids="$pids $jpid"
r=$(row "$T/out" jit-maps "pid $jpid")
case $r in ok$'\t'"/tmp/perf-$jpid.map names its JIT code"*) ;; *) fail "the command's jit-maps: $r";; esac
row "$T/out" debug-info /workloads/jit >/dev/null || fail "the command's program not examined"

# The allocator: jemalloc as a shared library, or linked into the program.
if [ -x "$WL/heapje" ]; then
    expect_status "$clean" "$KILN" doctor --json "$WL/heapje"
    r=$(row "$T/out" allocator /heapje)
    case $r in ok$'\t'"jemalloc ("*"libjemalloc.so"*", shared)"*) ;; *) fail "heapje: $r";; esac
    expect_status "$clean" "$KILN" doctor --json "$WL/heapje-static"
    r=$(row "$T/out" allocator /heapje-static)
    case $r in warn$'\t'"jemalloc linked into the program (it defines malloc)"*"link the allocator as a shared library"*) ;;
    *) fail "heapje-static: $r";; esac
fi

# Usage errors: exit 2 with a message.
expect_status 2 "$KILN" doctor /nonexistent/prog
has "$T/err" "cannot examine '/nonexistent/prog': No such file or directory"
printf 'not elf\n' > "$T/text"
expect_status 2 "$KILN" doctor "$T/text"
has "$T/err" "is not an ELF file"
expect_status 2 "$KILN" doctor -p 0
expect_status 2 "$KILN" doctor -p 1 "$WL/jit"
has "$T/err" "give one of -p PID, -- CMD and BINARY"
expect_status 2 "$KILN" doctor "$WL/jit" "$WL/shares"
expect_status 2 "$KILN" doctor -- /nonexistent/cmd
has "$T/err" "command not found"
expect_status 0 "$KILN" doctor --help
has "$T/out" "^Exit status: 0 when no check found a problem"
expect_status 0 "$KILN" help doctor
has "$T/out" "usage: kiln doctor"
echo ok
