#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Source lines of a program built by clang (-g -O2: DWARF 5 line tables,
# no .debug_aranges, which elfutils 0.188's libdwfl needs to find an
# address's unit): kiln record's functions, inlined frames and lines
# (kiln top --lines, go tool pprof -lines; also through the agent, --mode
# inject), kiln serve's source view
# (/api/source) and disassembly (/api/disasm) with lines of the workload's
# source.  symbolize/cuaddr.c finds the units from their own ranges.
# Then the program built from a relative path (`clang -g src/inlined.c`:
# DWARF 5 names directory "src" relative to the compile directory): its
# lines are named by absolute paths, and kiln serve, run elsewhere, reads
# the file as one the debug info names.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need clang
need curl
need python3
need_record

src=$KILN_SRC/tests/workloads/inlined.c
clang -g -gdwarf-5 -O2 -fno-omit-frame-pointer -o "$T/inlined" "$src" ||
    fail "clang could not build inlined.c"
# What the test is about: no .debug_aranges (said, not required: a clang
# that emits them still has to give the same lines).
if readelf -S "$T/inlined" | grep -q '\.debug_aranges'; then
    echo "note: this clang emits .debug_aranges"
fi
line_of() { grep -n "$1" "$src" | cut -d: -f1; }
inner=$(line_of 'INNER-LINE')
call_inner=$(line_of 'CALL-INNER')
call_middle=$(line_of 'CALL-MIDDLE')

expect_status 0 "$KILN" record -q -F 999 -o "$T/inl.pb.gz" -- "$T/inlined" 1
"$KILN" top -n 0 --lines "$T/inl.pb.gz" > "$T/lines.txt" || fail "kiln top --lines"
# The innermost inlined frame at its line, each caller at its call line.
has "$T/lines.txt" " mix_inner $src:$inner\$"
has "$T/lines.txt" " mix_middle $src:$call_inner\$"
has "$T/lines.txt" " outer_loop $src:$call_middle\$"
has "$T/lines.txt" " main $src:[0-9]+\$"
"$KILN" convert "$T/inl.pb.gz" -o "$T/inl.collapsed" || fail "kiln convert"
has "$T/inl.collapsed" "(^|;)main;outer_loop;mix_middle;mix_inner [0-9]+$"
# The in-process agent's light symbolizer (--mode inject): the same lines.
if [ "${KILN_SANITIZE:-OFF}" != ON ] && [ -e "$KILN_LIB" ]; then
    expect_status 0 "$KILN" record -q --mode inject -o "$T/inj.pb.gz" -- "$T/inlined" 1
    "$KILN" top -n 0 --lines "$T/inj.pb.gz" > "$T/inj.txt" || fail "kiln top --lines (inject)"
    has "$T/inj.txt" " mix_inner $src:$inner\$"
    has "$T/inj.txt" " outer_loop $src:$call_middle\$"
else
    echo "note: no agent here (ASan build or no libkiln.so): --mode inject not checked"
fi
if command -v go >/dev/null; then
    HOME=$T GOCACHE=$T/gocache go tool pprof -lines -top "$T/inl.pb.gz" \
        > "$T/pprof.txt" 2>/dev/null || fail "go tool pprof -lines"
    has "$T/pprof.txt" " mix_inner $src:$inner \(inline\)\$"
    has "$T/pprof.txt" " outer_loop $src:$call_middle\$"
fi

serve_start -q --http 127.0.0.1:0 "$T/inl.pb.gz"
# The source view: mix_inner's cost on its marked line, the text read
# from the file the debug info names.
expect_get 200 '/api/source?fn=mix_inner'
python3 - "$T/body" "$src" "$inner" <<'PY' || { head -c 1500 "$T/body"; fail "source of mix_inner"; }
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for x in d["files"] if x["file"] == sys.argv[2]]
assert len(f) == 1 and f[0]["text"] and f[0]["why"] is None, d["files"]
top = max(f[0]["lines"], key=lambda l: l["flat"])
assert top["line"] == int(sys.argv[3]) and "INNER-LINE" in top["text"], top
PY
# The disassembly: outer_loop's instructions carry lines of inlined.c,
# the inlined loop's line among them.
expect_get 200 '/api/disasm?fn=outer_loop'
python3 - "$T/body" "$src" "$call_inner" <<'PY' || { head -c 1500 "$T/body"; fail "disassembly of outer_loop"; }
import json, sys
d = json.load(open(sys.argv[1]))
srcs = [s["file"] for s in d["sources"]]
assert sys.argv[2] in srcs, srcs
k = srcs.index(sys.argv[2])
lines = {i[5] for i in d["insns"] if i[4] == k}
assert int(sys.argv[3]) in lines, sorted(lines)
PY
serve_stop

mkdir -p "$T/proj/src" "$T/elsewhere"
cp "$src" "$T/proj/src/inlined.c"
(cd "$T/proj" && clang -g -O2 -fno-omit-frame-pointer -o inlined src/inlined.c) ||
    fail "clang could not build src/inlined.c"
rsrc=$T/proj/src/inlined.c
expect_status 0 "$KILN" record -q -F 999 -o "$T/rel.pb.gz" -- "$T/proj/inlined" 1
"$KILN" top -n 0 --lines "$T/rel.pb.gz" > "$T/rel.txt" || fail "kiln top --lines"
has "$T/rel.txt" " mix_inner $rsrc:$inner\$"
has "$T/rel.txt" " outer_loop $rsrc:$call_middle\$"
cd "$T/elsewhere"
serve_start -q --http 127.0.0.1:0 "$T/rel.pb.gz"
expect_get 200 '/api/source?fn=mix_inner'
python3 - "$T/body" "$rsrc" "$inner" <<'PY' || { head -c 1500 "$T/body"; fail "source of mix_inner (relative build)"; }
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for x in d["files"] if x["file"] == sys.argv[2]]
assert len(f) == 1 and f[0]["text"] and f[0]["why"] is None, d["files"]
assert any(l["line"] == int(sys.argv[3]) and l["flat"] > 0 for l in f[0]["lines"]), f[0]["lines"]
PY
serve_stop
echo ok
