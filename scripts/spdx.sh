#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts "SPDX-License-Identifier: Apache-2.0" in every source file of kiln's
# own that git tracks (C, headers, shell, Python, CMake, awk, JavaScript,
# CSS, HTML, the page and pkg-config templates), in the comment syntax of
# each, after a "#!" line; files that name an identifier already are left
# alone.  Peers' files (tests/fixtures/, the fuzz corpora) are not kiln's:
# their licences are in debian/copyright and their folders' READMEs.
#   scripts/spdx.sh          add the line where it is missing
#   scripts/spdx.sh --check  list the files without one; exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
[ "${1:-}" = --check ] && check=true
id="SPDX-License-Identifier: Apache-2.0"
missing=0
while IFS= read -r f; do
    case $f in
    tests/fixtures/*|tests/fuzz/corpus/*|*/node_modules/*|debian/*) continue ;;
    *.c|*.h|*.cc|*.def|*.css) line="/* $id */" ;;
    *.proto|*.js|*.mjs) line="// $id" ;;
    *.html) line="<!-- $id -->" ;;
    *.sh|*.py|*.cmake|*.awk|*.in|*/CMakeLists.txt|CMakeLists.txt|Makefile|completion/*) line="# $id" ;;
    *) continue ;;
    esac
    head -n 5 "$f" | grep -q "SPDX-License-Identifier:" && continue
    missing=$((missing + 1))
    if $check; then
        echo "$f"
        continue
    fi
    first=$(head -n 1 "$f")
    # After "#!", "#compdef" and HTML's doctype (a comment before it would
    # put browsers in quirks mode).
    case $first in
    '#!'*|'#compdef'*|'<!DOCTYPE'*|'<!doctype'*) { printf '%s\n%s\n' "$first" "$line"; tail -n +2 "$f"; } > "$f.spdx" ;;
    *) { printf '%s\n' "$line"; cat "$f"; } > "$f.spdx" ;;
    esac
    chmod --reference="$f" "$f.spdx"
    mv "$f.spdx" "$f"
done < <(git ls-files; git ls-files --others --exclude-standard)
if $check && [ "$missing" -gt 0 ]; then
    echo "spdx: $missing files without an SPDX-License-Identifier line" >&2
    exit 1
fi
exit 0
