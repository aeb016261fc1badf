#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `kiln diff --fail-on 5%` as a CI gate, on synthetic profiles whose
# samples are multinomial draws (diffgen.py, fixed seeds: no flakes) of
# 4,000 samples from known shares: over 20 pairs of identical runs at most
# 1 false alarm (exit 1); over 20 pairs where burn_c's share grew from 20%
# to 25% (the others scaled down), the regression found (exit 1) in at
# least 19, with burn_c named, and nothing named but burn_c and its caller
# stage_c (whose cumulative share grew the same).  Then the same with three
# profiles of 3,000 samples a side (BASE... -- NEW...: the profiles
# resampled too).
. "$(dirname "$0")/lib.sh"
need python3
GEN="$(dirname "$0")/diffgen.py"

BASE="burn_a=34 burn_b=24 burn_c=20 burn_d=12 burn_e=8"
SLOW="burn_a=31.875 burn_b=22.5 burn_c=25 burn_d=11.25 burn_e=7.5"
for k in 0 1 2 3 4 5 6 7 8 9; do
    BASE="$BASE tiny_$k=0.2"
    SLOW="$SLOW tiny_$k=0.1875"
done

false_alarms=0 detected=0
check_pair() {    # check_pair KIND BASE_FILES -- NEW_FILES
    local kind=$1 st
    shift
    "$KILN" diff --no-svg --fail-on 5% "$@" >"$T/out" 2>"$T/err"
    st=$?
    [ "$st" = 0 ] || [ "$st" = 1 ] || { cat "$T/err"; fail "kiln diff exited $st"; }
    if [ "$kind" = same ]; then
        if [ "$st" = 1 ]; then
            false_alarms=$((false_alarms + 1))
            grep REGRESSION: "$T/out" >&2
        fi
        return
    fi
    [ "$st" = 1 ] || return 0
    grep -q '^REGRESSION: burn_c flat ' "$T/out" || return 0
    if grep '^REGRESSION:' "$T/out" | grep -Ev '^REGRESSION: (burn_c|stage_c) ' >&2; then
        fail "a function other than burn_c and its caller was named"
    fi
    detected=$((detected + 1))
}

python3 "$GEN" "$T/b%d.pb.gz" 1000+20 4000 $BASE
python3 "$GEN" "$T/n%d.pb.gz" 2000+20 4000 $BASE
python3 "$GEN" "$T/s%d.pb.gz" 3000+20 4000 $SLOW
for i in $(seq 1 20); do
    check_pair same "$T/b$i.pb.gz" "$T/n$i.pb.gz"
    check_pair slow "$T/b$i.pb.gz" "$T/s$i.pb.gz"
done
echo "one profile a side: $false_alarms false alarms in 20 identical pairs, $detected of 20 slower ones found"
[ "$false_alarms" -le 1 ] || fail "$false_alarms false alarms in 20 identical pairs"
[ "$detected" -ge 19 ] || fail "burn_c's regression found in $detected of 20 pairs only"

false_alarms=0 detected=0
# Profile 3i-2, 3i-1 and 3i of each kind make set i.
python3 "$GEN" "$T/mb%d.pb.gz" 5000+60 3000 $BASE
python3 "$GEN" "$T/mn%d.pb.gz" 6000+60 3000 $BASE
python3 "$GEN" "$T/ms%d.pb.gz" 7000+60 3000 $SLOW
set3() { echo "$T/$1$((3 * $2 - 2)).pb.gz $T/$1$((3 * $2 - 1)).pb.gz $T/$1$((3 * $2)).pb.gz"; }
for i in $(seq 1 20); do
    # shellcheck disable=SC2046
    check_pair same $(set3 mb "$i") -- $(set3 mn "$i")
    # shellcheck disable=SC2046
    check_pair slow $(set3 mb "$i") -- $(set3 ms "$i")
done
has "$T/out" 'bootstrap of 1000 over profiles and samples'
has "$T/out" '^cpu/nanoseconds: 3 base profiles \(9000 samples\) against 3 new profiles \(9000 samples\)'
echo "three profiles a side: $false_alarms false alarms in 20 identical sets, $detected of 20 slower ones found"
[ "$false_alarms" -le 1 ] || fail "$false_alarms false alarms in 20 identical sets"
[ "$detected" -ge 19 ] || fail "burn_c's regression found in $detected of 20 sets only"
exit 0
