#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Broken pprof input is refused with exit status 2 and a message naming
# the file, the format and the byte offset with the reason; nothing is
# written.  Uses the committed Go fixture, so no Go toolchain is needed.
. "$(dirname "$0")/lib.sh"
FIX=$KILN_SRC/tests/fixtures/pprof

gzip -dc "$FIX/go-cpu.pb.gz" >"$T/good.pb"
expect_status 0 "$KILN" top "$T/good.pb"
has "$T/out" "main\.spin"

# Cut short, uncompressed: the record that runs past the end.
head -c 300 "$T/good.pb" >"$T/cut.pb"
expect_status 2 "$KILN" top "$T/cut.pb"
has "$T/err" "^kiln: '.*cut\.pb': read as pprof: byte [0-9]+: not a pprof profile: Profile\.[a-z_]+ claims [0-9]+ bytes but only [0-9]+ remain"

# A string index out of range: function 0 named by string 5 of 1.
printf '\x2a\x04\x08\x01\x10\x05\x32\x00' >"$T/badstr.pb"
expect_status 2 "$KILN" top "$T/badstr.pb"
has "$T/err" "read as pprof: byte 0: function 0: name 5 is not in the string table \(1 strings\)"

# A sample naming a location that does not exist.
printf '\x12\x03\x0a\x01\x09\x32\x00' >"$T/badloc.pb"
expect_status 2 "$KILN" convert "$T/badloc.pb" -o "$T/never.pb.gz"
has "$T/err" "read as pprof: byte 0: sample 0: location id 9 does not exist"
[ ! -e "$T/never.pb.gz" ] || fail "output written for bad input"

# string_table[0] must be "".
printf '\x32\x01x' >"$T/str0.pb"
expect_status 2 "$KILN" top "$T/str0.pb"
has "$T/err" "byte 0: string_table\[0\] is \"x\" but must be empty"

# Bytes flipped inside the fixture: refused or read, never a crash.
for off in 10 50 100 200 400; do
    cp "$T/good.pb" "$T/flip.pb"
    printf '\xff\xff\xff' | dd of="$T/flip.pb" bs=1 seek=$off conv=notrunc 2>/dev/null
    rc=0
    "$KILN" top "$T/flip.pb" >"$T/out" 2>"$T/err" || rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 2 ] || { cat "$T/err" >&2; fail "flip at $off: exit $rc"; }
    [ $rc -eq 0 ] || has "$T/err" "read as pprof: byte [0-9]+: "
done
echo ok
