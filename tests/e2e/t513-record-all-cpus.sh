#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record -a: every process on every CPU.  Two programs with known
# splits run under names of their own (other copies of the workloads may
# run on a shared machine); each is found by its comm label with its own
# split, and kiln's own process is left out.
. "$(dirname "$0")/lib.sh"
need_record
need go
export HOME=$T GOCACHE=$T/gocache
p=$(cat /proc/sys/kernel/perf_event_paranoid)
[ "$(id -u)" -eq 0 ] || [ "$p" -le 0 ] || skip "-a needs root or perf_event_paranoid <= 0 (it is $p)"

a=kA$$; b=kB$$
cp "$WL/shares" "$T/$a"; cp "$WL/threads" "$T/$b"
"$T/$a" 60 & pa=$!
"$T/$b" 60 & pb=$!
trap 'kill $pa $pb 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
# Ready when both have exec'ed (their comm is the new name).
for i in $(seq 200); do
    [ "$(cat /proc/$pa/comm 2>/dev/null)" = "$a" ] && [ "$(cat /proc/$pb/comm 2>/dev/null)" = "$b" ] && break
    sleep 0.05
done
"$KILN" record -g -a -F 999 --duration 2 -o "$T/all.pb.gz" 2>"$T/err" & kp=$!
wait $kp || { cat "$T/err"; fail "kiln record -a exited $?"; }
kill $pa $pb; wait 2>/dev/null

# Per-process sample counts of function $2 in process $1.
count() {
    go tool pprof -sample_index=samples -tagfocus="comm=$1" -top -nodecount=100 "$T/all.pb.gz" 2>/dev/null |
        awk -v f="$2" '$NF==f { print $1; exit }'
}
ba=$(count "$a" burn_a); bb=$(count "$a" burn_b); bc=$(count "$a" burn_c)
sa=$(count "$b" spin_a); sb=$(count "$b" spin_b)
echo "shares: $ba $bb $bc  threads: $sa $sb"
tot=$(( ${ba:-0} + ${bb:-0} + ${bc:-0} ))
[ "$tot" -ge 50 ] || fail "only $tot samples of $a"
within "$(( 100 * ${ba:-0} / tot ))" 60 10 || fail "burn_a at $(( 100 * ${ba:-0} / tot ))% of $a, want 60±10"
within "$(( 100 * ${bb:-0} / tot ))" 30 10 || fail "burn_b at $(( 100 * ${bb:-0} / tot ))% of $a, want 30±10"
within "$(( 100 * ${bc:-0} / tot ))" 10 7 || fail "burn_c at $(( 100 * ${bc:-0} / tot ))% of $a, want 10±7"
tt=$(( ${sa:-0} + ${sb:-0} ))
[ "$tt" -ge 50 ] || fail "only $tt samples of $b"
within "$(( 100 * ${sa:-0} / tt ))" 50 12 || fail "spin_a at $(( 100 * ${sa:-0} / tt ))% of $b, want 50±12"
# The two programs' functions stay in their own processes.
[ -z "$(count "$b" burn_a)" ] || fail "burn_a counted in $b"
# Kiln's own samples are left out.
go tool pprof -tags "$T/all.pb.gz" > "$T/tags.txt" 2>/dev/null
sed -n '/^ *pid:/,/^$/p' "$T/tags.txt" > "$T/pids.txt"
has "$T/pids.txt" ": $pa\$"
hasnt "$T/pids.txt" ": $kp\$"
has "$T/tags.txt" "comm:"
has "$T/tags.txt" ": $a\$"
has "$T/tags.txt" ": $b\$"
# -C: one CPU only; a bad list is refused.
expect_status 0 "$KILN" record -q -a -C 0 --duration 0.3 -o "$T/c0.pb.gz"
expect_status 2 "$KILN" record -q -C 0-999 --duration 0.3 -o "$T/c1.pb.gz"
has "$T/err" "bad -C"
echo ok
