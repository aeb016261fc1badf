#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Long libFuzzer runs of the harnesses in tests/fuzz/ (`make fuzz`).
# Usage: scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]
#   BUILD_DIR  configured with -DKILN_FUZZ=ON (clang), harnesses built
#   SECONDS    run time of each harness (FUZZ_TIME in make)
#   HARNESS    fuzz-pprof ... (default: every one built)
# The harnesses run side by side at nice 19.  Each grows its own corpus in
# BUILD_DIR/fuzz-corpus/NAME (seeded from tests/fuzz/corpus/NAME, which it
# never writes); inputs that crash, leak or time out land in
# BUILD_DIR/fuzz-crashes/NAME/ (copy them into tests/fuzz/corpus/NAME/ once
# fixed).  Logs: BUILD_DIR/fuzz-logs/NAME.log; a summary at the end.
# FUZZ_TIMEOUT (default 120 s) is the time one input may take before it
# counts as a hang: generous, since at nice 19 on a busy machine a run may
# wait long for the CPU (30 s "timeouts" were such waits, 0.2 s of CPU).
set -u
build=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]}
secs=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]}
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
    for f in "$src"/tests/fuzz/fuzz-*.c; do set -- "$@" "$(basename "$f" .c)"; done
fi
mkdir -p "$build/fuzz-logs"
pids=
for h in "$@"; do
    name=${h#fuzz-}
    [ -x "$build/$h" ] || { echo "fuzz: $build/$h not built" >&2; exit 2; }
    mkdir -p "$build/fuzz-corpus/$name" "$build/fuzz-crashes/$name"
    nice -n 19 "$build/$h" -max_total_time="$secs" -rss_limit_mb=2048 \
        -timeout="${FUZZ_TIMEOUT:-120}" -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$build/fuzz-crashes/$name/" \
        "$build/fuzz-corpus/$name" "$src/tests/fuzz/corpus/$name" \
        > "$build/fuzz-logs/$name.log" 2>&1 &
    pids="$pids $!"
done
rc=0
for p in $pids; do wait "$p" || rc=1; done
for h in "$@"; do
    name=${h#fuzz-}
    log=$build/fuzz-logs/$name.log
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    crashes=$(ls "$build/fuzz-crashes/$name" | wc -l)
    printf '%-12s %10s execs  %s  crashes: %s\n' "$name" "${runs:-?}" \
        "$(echo "$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[^ ]+')" "$crashes"
done
exit $rc
