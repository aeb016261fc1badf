#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --hide RE (pprof's -hide) in kiln top, flame, callgraph and convert, and
# hide= in kiln serve: the frames whose function matches go from every
# stack, the samples stay (their values count where the rest of the stack
# leads: hiding the leaves makes their callers flat), and stacks that
# become equal merge.  Checked against go tool pprof -hide where Go is.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

cat > "$T/s.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_a;burn_a;burn_b 200
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
IN
expect_status 0 "$KILN" convert --hide '^burn' --to collapsed "$T/s.collapsed" -o "$T/h.collapsed"
sort "$T/h.collapsed" > "$T/h.sorted"
printf 'main;run;stage_a 800\nmain;run;stage_b 300\nmain;run;stage_c 100\n' > "$T/h.want"
diff -u "$T/h.want" "$T/h.sorted" || fail "convert --hide"
# Hiding the middle: burn_a's callers become run.
expect_status 0 "$KILN" top -n 0 --hide 'stage_|^run$' "$T/s.collapsed"
has "$T/out" "^ +600 50\.00% 50\.00% +800 66\.67%  burn_a$"
hasnt "$T/out" "stage_"
hasnt "$T/out" " run$"
expect_status 0 "$KILN" flame -q --hide 'stage_' "$T/s.collapsed" -o "$T/h.svg"
has "$T/h.svg" "burn_a"
hasnt "$T/h.svg" "stage_a"
expect_status 0 "$KILN" callgraph -q --format dot --hide 'stage_' "$T/s.collapsed" -o "$T/h.dot"
hasnt "$T/h.dot" "stage_"
grep -q 'label="run' "$T/h.dot" || fail "callgraph --hide lost run"
# A bad regex: exit 2 naming it.
expect_status 2 "$KILN" top --hide '(' "$T/s.collapsed"
has "$T/err" "bad hide regular expression"

if command -v go >/dev/null 2>&1; then
    expect_status 0 "$KILN" convert --to pprof "$T/s.collapsed" -o "$T/s.pb.gz"
    HOME=$T GOFLAGS= go tool pprof -top -hide 'stage_|^run$' "$T/s.pb.gz" > "$T/go.txt" 2>&1 ||
        { cat "$T/go.txt"; fail "go tool pprof -hide"; }
    grep -Eq '^ +600 50\.00% 50\.00% +800 66\.67% +burn_a$' "$T/go.txt" ||
        { cat "$T/go.txt"; fail "go tool pprof -hide differs"; }
fi

# kiln serve: hide= in every view, and focus with it.
serve_start -q --http 127.0.0.1:0 "$T/s.collapsed"
expect_get 200 '/api/top?hide=%5Eburn&n=0'
[ "$(jq -c '[.total, (.rows[] | select(.flat > 0) | [.name, .flat])]' "$T/body")" = \
  '[1200,["stage_a",800],["stage_b",300],["stage_c",100]]' ] || fail "top hide: $(cat "$T/body")"
expect_get 200 '/api/flame?hide=stage_&width=100'
[ "$(jq -c '[.depth, ([.names[]] | map(select(startswith("stage"))) | length)]' "$T/body")" = '[4,0]' ] ||
    fail "flame hide: $(cat "$T/body")"
expect_get 200 '/api/top?hide=stage_&focus=burn_c'
grep -q '"total":100,' "$T/body" || fail "hide with focus: $(cat "$T/body")"
expect_get 400 '/api/top?hide=%28'
has "$T/body" 'bad hide regular expression'
serve_stop
exit 0
