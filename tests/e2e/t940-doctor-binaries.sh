#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln doctor BINARY: frame pointers judged from the prologues of non-leaf
# functions (a workload built with frame pointers, the same built with
# -fomit-frame-pointer, one without unwind tables either), unwind tables,
# a stripped binary without a debug file (a problem: exit 1) and with one
# found by .gnu_debuglink or in kiln's debug file cache, the build ID, the
# allocator; each finding and fix, in the table and in --json.
. "$(dirname "$0")/lib.sh"
need gcc
need objcopy
need python3
row() { python3 "$KILN_SRC/tests/e2e/doctor-row.py" "$@"; }
# want FILE CHECK SUBJECT STATUS FINDING-RE [FIX-RE]
want() {
    local r
    r=$(row "$1" "$2" "$3") || fail "no $2 row for $3 in $1"
    case $r in "$4"$'\t'*) ;; *) fail "$2 of $3: want $4, got: $r";; esac
    printf '%s\n' "$r" | grep -Eq -- "$5" || fail "$2 of $3: finding not /$5/: $r"
    [ $# -lt 6 ] || printf '%s\n' "$r" | grep -Eq -- "$6" || fail "$2 of $3: fix not /$6/: $r"
}

# A binary without problems exits 0, unless the machine has one (where
# perf_event_open is refused, say): then 1.
"$KILN" doctor --json > "$T/m.json" || [ $? -eq 1 ] || fail "kiln doctor failed"
mp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["problems"])' "$T/m.json")
clean=$(( mp > 0 ))

# Frame pointers: the -O1 workload with -fno-omit-frame-pointer.
expect_status "$clean" "$KILN" doctor --json "$WL/shares"
cp "$T/out" "$T/fp.json"
want "$T/fp.json" frame-pointers /shares ok "^ok	yes: ([0-9]+) of \1 non-leaf functions sampled set up %rbp"
want "$T/fp.json" unwind-tables /shares ok ".eh_frame covers ([0-9]+) of \1 functions sampled"
want "$T/fp.json" debug-info /shares ok "DWARF in the file"
want "$T/fp.json" build-id /shares ok "^ok	[0-9a-f]{40}: "
want "$T/fp.json" allocator /shares ok "the C library's malloc"
# Its libraries are examined too, found as the loader finds them.
row "$T/fp.json" frame-pointers /libc.so.6 >/dev/null || fail "libc.so.6 not examined"
# The machine's rows come first and apply to the machine.
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"]; assert r[0]["applies_to"]=="machine", r[0]' "$T/fp.json" ||
    fail "the machine's rows do not come first"

# Without frame pointers: a warning (DWARF unwinding still works), exit 0.
expect_status "$clean" "$KILN" doctor --json "$WL/shares-nofp"
want "$T/out" frame-pointers /shares-nofp warn \
    "no: 0 of [1-9][0-9]* non-leaf functions sampled set up %rbp.*loses callers; DWARF unwinding works" \
    "-fno-omit-frame-pointer.*--call-graph dwarf"
# The table says the same, with the fix under the row.
expect_status "$clean" "$KILN" doctor "$WL/shares-nofp"
has "$T/out" "^binary .*/shares-nofp$"
has "$T/out" "^warn +frame-pointers +no: 0 of "
has "$T/out" "^ +fix: rebuild with -fno-omit-frame-pointer"
has "$T/out" "^[0-9]+ problems?, [0-9]+ warnings?$"

# gcc 12 gives small leaves no frame even with -fno-omit-frame-pointer:
# they are not counted, so an -O2 frame-pointer build is judged "yes".
cat > "$T/chain.c" <<'C'
__attribute__((noinline)) int leaf(int x) { return x * 3; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + leaf(x + 1); }
__attribute__((noinline)) int top(int x) { return mid(x) * mid(x - 1); }
int main(int argc, char **argv) { (void)argv; return top(argc) & 1; }
C
gcc -O2 -fno-omit-frame-pointer -o "$T/fp2" "$T/chain.c"
expect_status "$clean" "$KILN" doctor --json "$T/fp2"
want "$T/out" frame-pointers /fp2 ok "yes: ([0-9]+) of \1 non-leaf"
# Neither frame pointers nor unwind tables: stacks stop there (exit 1).
gcc -O1 -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables \
    -fno-inline -o "$T/bare" "$T/chain.c"
expect_status 1 "$KILN" doctor --json "$T/bare"
want "$T/out" frame-pointers /bare problem "no: 0 of [0-9]+ .*no unwind tables either" \
    "-fno-omit-frame-pointer"
want "$T/out" unwind-tables /bare problem "missing: .eh_frame covers 0 of " \
    "-fno-asynchronous-unwind-tables"

# Stripped, no debug file anywhere kiln looks: a problem, and the fix
# names the build-ID path.
cp "$WL/shares-nofp" "$T/prog"
objcopy --only-keep-debug "$T/prog" "$T/prog.debug"
strip -s -o "$T/stripped" "$T/prog"
expect_status 1 env KILN_CACHE_DIR= "$KILN" doctor --json "$T/stripped"
cp "$T/out" "$T/s.json"
sid=$(row "$T/s.json" build-id /stripped | cut -c4-43)
[ ${#sid} -eq 40 ] || fail "no build ID read from the stripped file"
want "$T/s.json" debug-info /stripped problem \
    "stripped: no symbol table, no DWARF, and no separate debug file found \(build ID $sid\)" \
    "/usr/lib/debug/.build-id/${sid:0:2}/${sid:2}.debug"
# Without symbols the prologues are found from .eh_frame_hdr's table.
want "$T/s.json" frame-pointers /stripped warn \
    "no: 0 of [1-9][0-9]* non-leaf .*functions found from .eh_frame_hdr: no symbols"
strip -s -o "$T/fpstripped" "$WL/shares"
expect_status 1 env KILN_CACHE_DIR= "$KILN" doctor --json "$T/fpstripped"
want "$T/out" frame-pointers /fpstripped ok \
    "yes: ([0-9]+) of \1 non-leaf .*functions found from .eh_frame_hdr \(no symbols\)"
expect_status 1 env KILN_CACHE_DIR= "$KILN" doctor "$T/stripped"
has "$T/out" "^problem +debug-info +stripped"
has "$T/out" "^$((mp + 1)) problems?, "

# With a debug file named by .gnu_debuglink beside it: found (exit 0), and
# its symbols let the prologues be judged again.
objcopy --add-gnu-debuglink="$T/prog.debug" "$T/stripped" "$T/linked"
expect_status "$clean" env KILN_CACHE_DIR= "$KILN" doctor --json "$T/linked"
want "$T/out" debug-info /linked ok "separate debug file $T/prog.debug, found by .gnu_debuglink"
want "$T/out" frame-pointers /linked warn "no: 0 of [1-9]"
# With the debug file in kiln's debug file cache, by build ID.
mkdir -p "$T/cache/${sid:0:2}"
cp "$T/prog.debug" "$T/cache/${sid:0:2}/${sid:2}.debug"
expect_status "$clean" env KILN_CACHE_DIR="$T/cache" "$KILN" doctor --json "$T/stripped"
want "$T/out" debug-info /stripped ok "found in kiln's debug file cache"

# A debuglink to another build's debug file (another build ID): not taken.
cp "$WL/shares" "$T/other"
objcopy --only-keep-debug "$T/other" "$T/other.debug"
objcopy --add-gnu-debuglink="$T/other.debug" "$T/stripped" "$T/wrong"
expect_status 1 env KILN_CACHE_DIR= "$KILN" doctor --json "$T/wrong"
want "$T/out" debug-info /wrong problem "stripped: .*debuglink other.debug"
echo ok
