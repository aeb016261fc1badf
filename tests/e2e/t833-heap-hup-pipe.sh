#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# kiln heap when its terminal goes away: SIGHUP to kiln reaches the
# program (as SIGTERM does) and kiln still writes its summary, pprof and
# timeline (it died at once, leaving the program running); a summary
# piped into `head` that stops reading does not cost the files (SIGPIPE
# killed kiln before them).  The closing line names the timeline with
# its prefix.
. "$(dirname "$0")/lib.sh"
need_agent

"$KILN" heap -o "$T/h" -- "$WL/heapkill" > "$T/hup.out" 2> "$T/hup.err" &
kp=$!
wait_for "heapkill to start" grep -q ready "$T/hup.out"
target=$(child_running "$kp" "$WL/heapkill") || fail "no heapkill process under kiln"
trap 'kill -9 $target 2>/dev/null; rm -rf "$T"' EXIT
kill -HUP "$kp"
rc=0; wait "$kp" || rc=$?
[ "$rc" -eq 129 ] || { cat "$T/hup.err"; fail "kiln heap exited $rc after SIGHUP, want 129"; }
has "$T/hup.err" 'killed by signal 1'
[ -s "$T/h.heap.pb.gz" ] || fail "no pprof after SIGHUP"
[ -s "$T/h.heap.svg" ] || fail "no timeline after SIGHUP"
! kill -0 "$target" 2>/dev/null || fail "the program outlived kiln heap"

# The summary's reader stops after a line.
set -o pipefail
"$KILN" heap -o "$T/p" -- "$WL/heapbasic" 2>&1 >/dev/null | head -1 > /dev/null || true
set +o pipefail
[ -s "$T/p.heap.pb.gz" ] || fail "no pprof when the summary's reader went away"
[ -s "$T/p.heap.svg" ] || fail "no timeline when the summary's reader went away"
expect_status 0 "$KILN" heap -o "$T/m" -- "$WL/heapbasic"
has "$T/err" "timeline in '$T/m.heap.svg'"
echo ok
