#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Labels and comments survive kiln convert pprof -> pprof: a Go profile
# whose samples carry the label worker=a|b|c (pprof.Do), with a comment
# added by `go tool pprof -add_comment`, gives the same -tags, -comments
# and -raw samples in go tool pprof after kiln rewrote it.
. "$(dirname "$0")/lib.sh"
need go
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local

mkdir "$T/gen"
cp "$KILN_SRC/tests/fixtures/pprof/gen/main.go" "$T/gen/"
(cd "$T/gen" && go build -o "$T/gen/gen" .) >"$T/build.log" 2>&1 ||
    { cat "$T/build.log" >&2; fail "cannot build the Go profile generator"; }
"$T/gen/gen" -o "$T/lab.pb.gz" -ms 1000 -labels || fail "the Go generator failed"
go tool pprof -add_comment "made for kiln test t102" -proto "$T/lab.pb.gz" \
    >"$T/in.pb.gz" 2>"$T/goerr" || { cat "$T/goerr" >&2; fail "go tool pprof -add_comment failed"; }

expect_status 0 "$KILN" convert "$T/in.pb.gz" -o "$T/k.pb.gz"

for what in tags comments; do
    go tool pprof -$what "$T/in.pb.gz" >"$T/want.$what" 2>/dev/null ||
        fail "go tool pprof -$what failed on the Go profile"
    go tool pprof -$what "$T/k.pb.gz" >"$T/got.$what" 2>"$T/goerr" ||
        { cat "$T/goerr" >&2; fail "go tool pprof -$what cannot read kiln's pprof"; }
    diff -u "$T/want.$what" "$T/got.$what" || fail "-$what differs after kiln convert"
done
has "$T/got.tags" "worker: Total"
has "$T/got.tags" "[0-9.]+(ms|s) \([0-9.]+%\): a$"
has "$T/got.comments" "^made for kiln test t102$"

# Samples with their values and labels (location ids may be renumbered:
# compare each sample's values and labels, not its ids).
samples() {
    go tool pprof -raw "$1" 2>/dev/null |
        awk '/^Samples:/ { f = 1; next } /^Locations/ { f = 0 }
             f && /:/ && $1 ~ /^[0-9]+$/ { v = $1 " " $2; next }
             f && /worker:/ { print v, $1 }' | sort
}
samples "$T/in.pb.gz" >"$T/want.raw"
samples "$T/k.pb.gz" >"$T/got.raw"
[ -s "$T/want.raw" ] || fail "no labelled samples in go tool pprof -raw"
diff -u "$T/want.raw" "$T/got.raw" || fail "-raw samples differ after kiln convert"

# Period, period type and duration are kept too.
go tool pprof -raw "$T/in.pb.gz" 2>/dev/null | grep -E '^(PeriodType|Period|Duration):' >"$T/want.hdr"
go tool pprof -raw "$T/k.pb.gz" 2>/dev/null | grep -E '^(PeriodType|Period|Duration):' >"$T/got.hdr"
diff -u "$T/want.hdr" "$T/got.hdr" || fail "period or duration changed"
echo ok
