# SPDX-License-Identifier: Apache-2.0
# Helpers for the kiln serve load tests (t963-t966; sourced after lib.sh
# and lib-serve.sh).  big_profile N K: a pprof of N samples over K
# stacks with times (bench/gen-perfscript, as bench/serve-load.sh makes
# its input) in $T/big.pb.gz.  names: the profile's function names, one
# a line, hottest first, in $T/names (from a running server's top).
# ere NAME: NAME as a POSIX ERE matching it literally; q S: S %-encoded.
GENPS=$KILN_BUILD/tools/gen-perfscript
big_profile() {
    [ -x "$GENPS" ] || fail "no $GENPS: build the gen-perfscript target"
    "$GENPS" -n "$1" -k "$2" -s 7 -o "$T/big.perf" 2>/dev/null || fail "gen-perfscript failed"
    expect_status 0 "$KILN" convert -q "$T/big.perf" -o "$T/big.pb.gz"
    rm -f "$T/big.perf"
}
names() {
    get "/api/top?n=300"
    [ "$STATUS" = 200 ] || fail "top: $STATUS $(cat "$T/body")"
    jq -r '.rows[].name' "$T/body" > "$T/names"
    [ "$(wc -l < "$T/names")" -ge 100 ] || fail "too few functions: $(wc -l < "$T/names")"
}
ere() { printf '%s' "$1" | sed 's/[][\.^$*+?(){}|\\]/\\&/g'; }
q() { jq -rn --arg s "$1" '$s|@uri'; }
# status: /api/status in $T/st.
status() { curl -s -o "$T/st" "${URL}api/status" || fail "curl /api/status failed"; }
