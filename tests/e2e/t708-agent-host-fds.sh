#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A host that treats fds as daemons do (tests/workloads/fdhostile.c) runs
# the same bare and under the agent in each mode (CPU, heap trace, HTTP,
# all three): kiln never writes into, reads from or closes an fd number
# that has become the host's.  Before the fix: the heap trace's zstd
# frames or its close() hit the host's pipe (the host died of SIGPIPE),
# the SIGTERM path wrote a byte into the host's pipe, and KILN_LOG's
# messages landed in the data file that had become fd 2.
. "$(dirname "$0")/lib.sh"
need_agent

modes=(
    "KILN_CPU=$T/c.pb.gz KILN_CPU_HZ=999"
    "KILN_HEAP_TRACE=$T/h.trace"
    "KILN_HTTP=127.0.0.1:0"
    "KILN_CPU=$T/c.pb.gz KILN_CPU_HZ=999 KILN_HEAP_TRACE=$T/h.trace KILN_HTTP=127.0.0.1:0"
)
mkdir -p "$T/bare" "$T/agent"

# run NAME MODE-ENV SUB [ARG]: bare and under the agent; stdout and status
# compared.
run() {
    local name=$1 envs=$2 sub=$3 rc=0 brc=0
    shift 3
    rm -rf "$T/bare"/* "$T/agent"/* "$T"/c.pb.gz* "$T"/h.trace*
    "$WL/fdhostile" "$sub" "$T/bare" "$@" 2>/dev/null | cat > "$T/bare.txt"; brc=${PIPESTATUS[0]}
    env LD_PRELOAD="$(agent_lib $envs)" KILN_LOG=info $envs "$WL/fdhostile" "$sub" "$T/agent" "$@" \
        2> "$T/agent.err" | cat > "$T/agent.txt"; rc=${PIPESTATUS[0]}
    [ "$brc" -eq "$rc" ] || { cat "$T/agent.txt" "$T/agent.err" >&2; fail "$name $sub: exit status $rc under the agent, $brc without"; }
    diff -u "$T/bare.txt" "$T/agent.txt" || fail "$name $sub: the output changed under the agent"
}

i=0
for m in "${modes[@]}"; do
    i=$((i + 1))
    run "mode $i" "$m" closeall
    has "$T/agent.txt" "pipes and log intact"
    case $m in *KILN_HEAP_TRACE*)
        # The trace goes on past the close of every fd (opened again).
        python3 "$KILN_SRC/tests/e2e/heapcheck.py" "$T/h.trace" "$WL/fdhostile" > "$T/check.txt" ||
            fail "mode $i: the heap trace is not valid after the host closed its fd"
        has "$T/check.txt" "^site fd_work " ;;
    esac
    case $m in *KILN_CPU*)
        [ -s "$T/c.pb.gz" ] || fail "mode $i: no CPU profile" ;;
    esac

    run "mode $i" "$m" stderr
    printf 'data\n' > "$T/want"
    cmp -s "$T/want" "$T/agent/data" ||
        { cat -A "$T/agent/data" >&2; fail "mode $i: kiln wrote into the file that became fd 2"; }

    run "mode $i" "$m" term
    has "$T/agent.txt" "term: 0 stray bytes"
    case $m in *KILN_CPU*)
        # Written on SIGTERM although the host closed every fd.
        [ -s "$T/c.pb.gz" ] || fail "mode $i: no CPU profile after SIGTERM" ;;
    esac
done

# The CPU collector's symbolizer holds descriptors of the libraries it
# names (libdwfl's, closed by number when it drops them): a host that
# closes every fd once they are open, opens its own, then loads a library
# (the collector then drops its symbols) keeps its pipes and log.  Before
# the fix libdwfl held the low numbers the host reopened, and its close
# hit two of the host's pipes ("write failed: Bad file descriptor").
run "CPU" "KILN_CPU=$T/c.pb.gz KILN_CPU_HZ=999" late "$WL/libplugin.so"
has "$T/agent.txt" "late: pipes and log intact"
echo ok
