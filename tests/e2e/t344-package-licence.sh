#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The licence: LICENSE is the Apache License 2.0; every source file of
# kiln's own names it in an SPDX-License-Identifier line
# (scripts/spdx.sh --check); debian/copyright is machine-readable (DEP-5)
# and lists every peer's file kept in tests/fixtures with its licence.
. "$(dirname "$0")/lib.sh"
need git
git -C "$KILN_SRC" rev-parse HEAD > /dev/null 2>&1 || skip "not a git checkout"

head -3 "$KILN_SRC/LICENSE" | grep -q "Apache License" || fail "LICENSE is not the Apache License"
grep -q "Version 2.0, January 2004" "$KILN_SRC/LICENSE" || fail "LICENSE is not version 2.0"
bash "$KILN_SRC/scripts/spdx.sh" --check > "$T/missing" 2>&1 || { cat "$T/missing" >&2; fail "files without SPDX lines"; }

c=$KILN_SRC/debian/copyright
has "$c" "^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/$"
has "$c" "^Files: \*$"
# Every License: short name has its paragraph.
for l in $(awk '/^License: / { print $2 }' "$c" | sort -u); do
    [ "$(grep -c "^License: $l\$" "$c")" -ge 1 ] || fail "no License: $l paragraph"
done
# Every peer's perf.data named, with the licence its README gives.
for f in "$KILN_SRC"/tests/fixtures/perfdata/peers/*; do
    b=$(basename "$f")
    [ "$b" = README.md ] && continue
    grep -q "tests/fixtures/perfdata/peers/$b\$" "$c" || fail "debian/copyright lacks $b"
done
has "$c" "^Files: tests/fixtures/perfscript/flamegraph/\*$"
has "$c" "^License: CDDL-1.0$"
has "$c" "^Files: tests/fixtures/pprof/legacy/\*$"
has "$c" "^Files: tests/fixtures/speedscope/\*$"
has "$c" "^License: MIT$"
has "$c" "^License: GPL-3$"
has "$c" "^License: GPL-2\+$"
# Each fixtures README that names a licence is covered.
grep -l -i "licen" "$KILN_SRC"/tests/fixtures/*/README.md "$KILN_SRC"/tests/fixtures/*/*/README.md 2>/dev/null |
while read -r r; do
    d=${r#"$KILN_SRC"/}; d=${d%/README.md}
    grep -q "^Files: .*$d/\|^ $d/\|Files: $d/" "$c" || fail "debian/copyright has nothing of $d"
done
echo ok
