#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pprof written by Go (runtime/pprof in a program that burns CPU in
# main.burnA/B/C, and the same profile rewritten by `go tool pprof -proto`)
# is read by kiln: `kiln top` shows the same total and the same functions,
# with the same cumulative shares, as `go tool pprof -top`.
. "$(dirname "$0")/lib.sh"
need go
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local

# The "of Z total" of a pprof-style -top header, in milliseconds
# (Go prints 1000ms or 1.01s, kiln 1s or 1.01s).
total_ms() {
    sed -n 's/.*Showing nodes accounting for .* of \([^ ]*\) total.*/\1/p' "$1" | head -1 |
        awk '{ v = $1; u = $1; sub(/^[0-9.]+/, "", u); sub(/[^0-9.]+$/, "", v)
               m = -1
               if (u == "ns") m = 1e-6; else if (u == "us" || u == "µs") m = 1e-3
               else if (u == "ms") m = 1; else if (u == "s") m = 1000
               else if (u == "min") m = 60000; else if (u == "hrs") m = 3600000
               if (m < 0 || v == "") exit 1
               printf "%.3f\n", v * m }'
}
# The function names of a -top table (rows after the column header);
# go tool pprof marks a function inlined into its caller with a last
# column "(inline)" ("runtime.unlock (inline)": a sample in a runtime
# lock now and then).
names() { awk 'f && NF >= 6 { n = $NF; if (n == "(inline)") n = $(NF - 1); print n }
               /flat%/ { f = 1 }' "$1" | sort; }
# cum% of function $2 in -top table $1.
cum_pct() { awk -v f="$2" '$NF == f { gsub("%", "", $5); print $5; exit }' "$1"; }

mkdir "$T/gen"
cp "$KILN_SRC/tests/fixtures/pprof/gen/main.go" "$T/gen/"
(cd "$T/gen" && go build -o "$T/gen/gen" .) >"$T/build.log" 2>&1 ||
    { cat "$T/build.log" >&2; fail "cannot build the Go profile generator"; }
"$T/gen/gen" -o "$T/go.pb.gz" -ms 1500 || fail "the Go generator failed"
go tool pprof -proto "$T/go.pb.gz" >"$T/go2.pb.gz" 2>"$T/proto.err" ||
    { cat "$T/proto.err" >&2; fail "go tool pprof -proto failed"; }

for f in go.pb.gz go2.pb.gz; do
    go tool pprof -top "$T/$f" >"$T/gotop" 2>"$T/goerr" ||
        { cat "$T/goerr" >&2; fail "go tool pprof -top $f failed"; }
    expect_status 0 "$KILN" top -n 0 "$T/$f"
    cp "$T/out" "$T/ktop"
    gt=$(total_ms "$T/gotop") || fail "no total in go tool pprof's header"
    kt=$(total_ms "$T/ktop") || { cat "$T/ktop" >&2; fail "no total in kiln top's header"; }
    # Both print about three significant digits.
    within "$kt" "$gt" "$(awk -v g="$gt" 'BEGIN { print g / 100 + 0.001 }')" ||
        fail "$f: kiln total ${kt}ms, go tool pprof ${gt}ms"
    names "$T/gotop" >"$T/gonames"
    names "$T/ktop" >"$T/knames"
    diff -u "$T/gonames" "$T/knames" || fail "$f: kiln top and go tool pprof -top list different functions"
    for fn in main.burnA main.burnB main.burnC main.spin main.main; do
        g=$(cum_pct "$T/gotop" "$fn")
        k=$(cum_pct "$T/ktop" "$fn")
        [ -n "$g" ] && [ -n "$k" ] || fail "$f: $fn missing (go '$g', kiln '$k')"
        within "$k" "$g" 0.02 || fail "$f: $fn cum% kiln $k, go $g"
    done
done
# The run burned A for 60% of its time: the profile saw that too.
within "$(cum_pct "$T/ktop" main.burnA)" 60 15 || { cat "$T/ktop" >&2; fail "main.burnA far from 60%"; }
echo ok
