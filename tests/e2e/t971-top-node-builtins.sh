#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# node maps V8's embedded builtins a second time from /usr/bin/node (an
# ET_EXEC file) at another address and file offset; perf names those
# frames (Builtins_FindOrderedHashMapEntry).  kiln names them as perf
# report does: the same names with the same sample counts in perf's
# perf.data, and the same names in kiln record's own profile of the same
# workload, with no share left unnamed as [node].
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf
need node
JS=$KILN_SRC/tests/workloads/js/hotjit.js
# (node writes isolate-*-v8.log files where it runs.)
cd "$T"

perf_record -q -F 999 -g -o "$T/node.data" -- node "$JS" 300 >/dev/null 2>&1 ||
    fail "perf record of node failed"
# perf report's builtins with their sample counts (summed by name), most first.
perf_flat "$T/node.data" |
    awk '$3 ~ /^Builtins_/ && NF == 3 { n[$3] += $2 } END { for (f in n) print n[f], f }' |
    sort -rn > "$T/perf.builtins"
[ "$(awk '$1 >= 5' "$T/perf.builtins" | wc -l)" -ge 1 ] ||
    { cat "$T/perf.builtins" >&2; fail "perf report names no builtin with 5 samples"; }
has "$T/perf.builtins" ' Builtins_FindOrderedHashMapEntry$'

expect_status 0 "$KILN" top -n 0 --sample-type samples "$T/node.data"
cp "$T/out" "$T/kiln.samples"
# The three most sampled builtins: the same name, the same self count.
head -3 "$T/perf.builtins" | while read -r want name; do
    got=$(top_pct "$T/kiln.samples" "$name" 1)
    [ "$got" = "$want" ] ||
        { head -20 "$T/kiln.samples" >&2; fail "$name: kiln counts ${got:-no} samples, perf report $want"; }
done || exit 1

# kiln record of the same workload names the builtins perf names.
need_record
expect_status 0 "$KILN" record -F 999 -o "$T/node.pb.gz" -- node "$JS" 300
expect_status 0 "$KILN" top -n 0 "$T/node.pb.gz"
cp "$T/out" "$T/live.top"
has "$T/live.top" ' Builtins_FindOrderedHashMapEntry$'
# Every builtin kiln names with 1% or more is one perf names.
awk '$NF ~ /^Builtins_/ { p=$2; sub("%","",p); if (p >= 1) print $NF }' "$T/live.top" |
    while read -r name; do
        grep -q " $name\$" "$T/perf.builtins" || fail "kiln record names $name, perf report does not"
    done || exit 1
# The second mapping is no longer left as the file's name.
pct=$(top_pct "$T/live.top" '[node]')
within "${pct:-0}" 0 1 || fail "kiln record leaves ${pct}% as [node]"
exit 0
