#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record of a stripped program (no symbols for its own functions, no
# build ID to find a debug copy by): its frames are named by the module,
# "[stripped-shares]", one frame per module as FlameGraph and perf script
# name them, not one per address; the addresses stay in the profile's
# locations (kiln top --addresses, and the pprof file's location addresses).
. "$(dirname "$0")/lib.sh"
need_record
need strip

cp "$WL/shares" "$T/stripped-shares"
strip --strip-all --remove-section=.note.gnu.build-id "$T/stripped-shares" ||
    fail "strip failed"
expect_status 0 "$KILN" record -q -F 499 -o "$T/s.pb.gz" -- "$T/stripped-shares" 1
expect_status 0 "$KILN" top -n 0 "$T/s.pb.gz"
has "$T/out" ' \[stripped-shares\]$'
[ "$(grep -c 'stripped-shares' "$T/out")" = 1 ] || fail "more than one row for stripped-shares"
hasnt "$T/out" 'stripped-shares\+0x|burn_a'
expect_status 0 "$KILN" top -n 0 --addresses "$T/s.pb.gz"
[ "$(grep -Ec ' [0-9a-f]{16} \[stripped-shares\]$' "$T/out")" -gt 1 ] ||
    fail "kiln top --addresses shows one address of stripped-shares"
expect_status 0 "$KILN" convert "$T/s.pb.gz" -o "$T/s.collapsed"
has "$T/s.collapsed" '\[stripped-shares\]'
echo ok
