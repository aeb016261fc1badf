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
    case $b in README.md|COPYING.*) continue ;; esac
    grep -q "tests/fixtures/perfdata/peers/$b\$" "$c" || fail "debian/copyright lacks $b"
done
has "$c" "^Files: tests/fixtures/perfscript/flamegraph/\*$"
has "$c" "^License: CDDL-1.0$"
has "$c" "^Files: tests/fixtures/pprof/legacy/\*$"
has "$c" "^Files: tests/fixtures/speedscope/\*$"
has "$c" "^License: MIT$"
has "$c" "^License: GPL-3$"
has "$c" "^License: GPL-2\+$"
# The licences' texts travel with the files that need them.
grep -q "COMMON DEVELOPMENT AND DISTRIBUTION LICENSE" "$KILN_SRC/tests/fixtures/perfscript/flamegraph/LICENSE.CDDL-1.0" ||
    fail "no CDDL text beside FlameGraph's files"
grep -q "GNU GENERAL PUBLIC LICENSE" "$KILN_SRC/tests/fixtures/perfdata/peers/COPYING.GPL-3" || fail "no GPL-3 text"
grep -q "Version 2, June 1991" "$KILN_SRC/tests/fixtures/perfdata/peers/COPYING.GPL-2" || fail "no GPL-2 text"
# Fuzz seeds copied from the peers' fixtures are covered too.
for f in "$KILN_SRC"/tests/fuzz/corpus/*/*; do
    b=$(basename "$f")
    m=$(find "$KILN_SRC/tests/fixtures/pprof/legacy" "$KILN_SRC/tests/fixtures/speedscope" -name "$b" | head -1)
    [ -n "$m" ] || continue
    d=${f#"$KILN_SRC"/}
    grep -qF " $d" "$c" || grep -qF "${d%/*}/${b%%.*}.*" "$c" || fail "debian/copyright lacks the seed $d"
done
# Each fixtures README that names a licence is covered.
grep -l -i "licen" "$KILN_SRC"/tests/fixtures/*/README.md "$KILN_SRC"/tests/fixtures/*/*/README.md 2>/dev/null |
while read -r r; do
    d=${r#"$KILN_SRC"/}; d=${d%/README.md}
    grep -q "^Files: .*$d/\|^ $d/\|Files: $d/" "$c" || fail "debian/copyright has nothing of $d"
done
echo ok
