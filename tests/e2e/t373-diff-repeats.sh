#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln diff BASE... -- NEW... takes the spread between repeated runs into
# its intervals: synthetic runs (diffgen.py, fixed seeds) whose burn_a and
# burn_b shares vary from run to run by up to 7 points beyond sampling
# noise, three runs of 2,000 samples a side, nothing changed between the
# sides.  Compared run by run (the profiles resampled), --fail-on 5% raises
# at most 2 false alarms in 20 sets; the same runs merged into one profile
# a side (only the samples resampled) raise more than that, which shows
# that these runs vary more than their samples tell.
. "$(dirname "$0")/lib.sh"
need python3
GEN="$(dirname "$0")/diffgen.py"
cd "$T" || fail "no $T"

RUNS="burn_a=34~7 burn_b=24~7 burn_c=20 burn_d=12 burn_e=8"
python3 "$GEN" "b%d.pb.gz" 8000+60 2000 $RUNS
python3 "$GEN" "n%d.pb.gz" 9000+60 2000 $RUNS
set3() { echo "$1$((3 * $2 - 2)).pb.gz $1$((3 * $2 - 1)).pb.gz $1$((3 * $2)).pb.gz"; }
by_runs=0 merged=0
for i in $(seq 1 20); do
    # shellcheck disable=SC2046
    "$KILN" diff --no-svg --fail-on 5% $(set3 b "$i") -- $(set3 n "$i") >out 2>err
    st=$?
    [ "$st" = 0 ] || [ "$st" = 1 ] || { cat err; fail "kiln diff exited $st"; }
    [ "$st" = 1 ] && by_runs=$((by_runs + 1))
    # shellcheck disable=SC2046
    "$KILN" convert $(set3 b "$i") -o mb.pb.gz 2>/dev/null || fail "convert"
    # shellcheck disable=SC2046
    "$KILN" convert $(set3 n "$i") -o mn.pb.gz 2>/dev/null || fail "convert"
    "$KILN" diff --no-svg --fail-on 5% mb.pb.gz mn.pb.gz >out 2>err
    st=$?
    [ "$st" = 0 ] || [ "$st" = 1 ] || { cat err; fail "kiln diff exited $st"; }
    [ "$st" = 1 ] && merged=$((merged + 1))
done
echo "false alarms in 20 sets: $by_runs run by run, $merged merged"
[ "$by_runs" -le 2 ] || fail "$by_runs false alarms in 20 sets of varying runs"
[ "$merged" -gt 2 ] || fail "the merged runs gave $merged false alarms: the test's runs do not vary enough to show anything"
exit 0
