#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pprof written by `kiln convert` is read by `go tool pprof`: from a Go
# CPU profile, kiln's .pb.gz and .pb give exactly the -top table of the
# original (same total, names, flat and cum); converting is deterministic,
# and kiln reads its own output back with the same table.
. "$(dirname "$0")/lib.sh"
need go
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local

mkdir "$T/gen"
cp "$KILN_SRC/tests/fixtures/pprof/gen/main.go" "$T/gen/"
(cd "$T/gen" && go build -o "$T/gen/gen" .) >"$T/build.log" 2>&1 ||
    { cat "$T/build.log" >&2; fail "cannot build the Go profile generator"; }
"$T/gen/gen" -o "$T/go.pb.gz" -ms 1000 || fail "the Go generator failed"

# The table from "Showing nodes" on, rows sorted (ties may be ordered
# differently when ids differ).
gotop() {
    go tool pprof -top "$1" >"$T/gt.raw" 2>"$T/goerr" ||
        { cat "$T/goerr" >&2; fail "go tool pprof cannot read $1"; }
    awk '/^Showing nodes/ { f = 1; print; next } f && /flat%/ { print; next } f' "$T/gt.raw" |
        { IFS= read -r a; IFS= read -r b; printf '%s\n%s\n' "$a" "$b"; sort; }
}

gotop "$T/go.pb.gz" >"$T/want"
grep -q "main.burnA" "$T/want" || fail "the Go profile has no main.burnA"

expect_status 0 "$KILN" convert "$T/go.pb.gz" -o "$T/k.pb.gz"
gzip -t "$T/k.pb.gz" || fail "kiln's .pb.gz is not gzip"
gotop "$T/k.pb.gz" >"$T/got"
diff -u "$T/want" "$T/got" || fail "go tool pprof -top differs on kiln's pprof"

expect_status 0 "$KILN" convert "$T/go.pb.gz" -o "$T/k.pb"
if gzip -t "$T/k.pb" 2>/dev/null; then fail ".pb output is compressed"; fi
gotop "$T/k.pb" >"$T/got"
diff -u "$T/want" "$T/got" || fail "go tool pprof -top differs on kiln's .pb"

# Same input, same bytes.
expect_status 0 "$KILN" convert "$T/go.pb.gz" -o "$T/k2.pb.gz"
cmp "$T/k.pb.gz" "$T/k2.pb.gz" || fail "two conversions differ"
# pprof -> pprof -> pprof is stable: kiln's ids are already 1..n.
expect_status 0 "$KILN" convert "$T/k.pb" -o "$T/k3.pb"
cmp "$T/k.pb" "$T/k3.pb" || fail "converting kiln's own pprof changed it"

# kiln reads its output back: the same kiln top table.
expect_status 0 "$KILN" top -n 0 "$T/go.pb.gz"
mv "$T/out" "$T/ktop1"
expect_status 0 "$KILN" top -n 0 "$T/k.pb.gz"
diff -u "$T/ktop1" "$T/out" || fail "kiln top differs after the round trip"

# go tool pprof finds file and line in kiln's output (-lines).
go tool pprof -top -lines "$T/k.pb.gz" >"$T/lines" 2>/dev/null
has "$T/lines" "main\.burnA .*main\.go:[0-9]+"
echo ok
