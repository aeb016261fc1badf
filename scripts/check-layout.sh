#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the layout of src/ that STYLE.md describes, for `ctest -R layout`:
#   - every #include "DIR/..." of a file in src/FOLDER/ names FOLDER itself
#     or a folder the table below lets FOLDER include (a lower stage);
#   - no two folders include each other (a cycle: one holds the other's),
#     counting every include, those excepted from the direction too;
#   - no .c file is over 800 lines, no function over 150 lines.
# What breaks a rule today, while folders are being moved, is listed with
# a reason in scripts/layout-exceptions.txt; anything else fails.
#
# usage: scripts/check-layout.sh [SOURCE_ROOT [EXCEPTIONS_FILE]]
# (EXCEPTIONS_FILE relative to SOURCE_ROOT; bash, find, sort and awk only)
# Prints each breach as "FILE:LINE: what (rule)" and exits 1; exits 0 when
# there is none.  Exceptions that no longer match are noted, not failed.
set -euo pipefail

root=${1:-$(dirname "$0")/..}
cd "$root"
exceptions=${2:-scripts/layout-exceptions.txt}

# folder: the folders it may include besides itself.  Direction (STYLE.md):
# cli, web -> session -> capture/symbolize/format -> profile -> util
# (cli -> doctor -> session and below: kiln doctor's checks), and
# libkiln -> {cpu, heap, locks, http} -> {runtime, unwind} -> {profile,
# symbolize, format, util}.  kiln/ is the public header (include/kiln/).
# Folders not made yet (session, locks) are in already.
rules='
util:
profile:   util
symbolize: profile util
format:    symbolize profile util
capture:   symbolize profile util
render:    profile util
session:   capture symbolize format render profile util
web:       session render format symbolize profile util
cli:       web doctor session capture symbolize format render profile util
doctor:    session capture symbolize format profile util
runtime:   util
unwind:    runtime util
cpu:       runtime unwind format symbolize profile util kiln
heap:      cpu runtime unwind format symbolize profile util kiln
locks:     runtime unwind format symbolize profile util kiln
http:      cpu heap locks runtime unwind format symbolize profile util kiln
libkiln:   cpu heap locks http runtime unwind web render format symbolize profile util kiln
'
# libkiln -> web, render: draw.c hands http/ kiln serve's saved page and
# the flame graph SVG (the CLI's stages, linked into the .so too).
# Among libkiln.so's parts: heap -> cpu (cpu/procprof.h: this process's
# profiles, which the heap dumps share), http -> cpu, heap, locks (the
# endpoints serve the other parts' profiles); never the other way.
max_file_lines=800
max_func_lines=150

[ -f "$exceptions" ] || exceptions=/dev/null
mapfile -t files < <(find src -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | LC_ALL=C sort)
[ "${#files[@]}" -gt 0 ] || { echo "check-layout: no source files under $root/src" >&2; exit 2; }

printf '%s\n' "$rules" | awk -v max_file="$max_file_lines" -v max_func="$max_func_lines" '
# Pass 1: the rules table.
FILENAME == "-" {
	if ($0 !~ /:/)
		next
	f = $0; sub(/:.*/, "", f); gsub(/[ \t]/, "", f)
	known[f] = 1
	list = $0; sub(/^[^:]*:/, "", list)
	n = split(list, w, /[ \t]+/)
	for (i = 1; i <= n; i++)
		if (w[i] != "")
			allow[f, w[i]] = 1
	rule[f] = list; gsub(/^[ \t]+|[ \t]+$/, "", rule[f])
	if (rule[f] == "")
		rule[f] = "nothing"
	next
}
# Pass 2: the exceptions file.
FILENAME == exfile {
	line = $0
	if (line ~ /^[ \t]*(#|$)/)
		next
	if (line !~ /#[ \t]*[^ \t]/) {
		printf "%s:%d: an exception without a reason (\"# why\")\n", exfile, FNR
		bad++
		next
	}
	sub(/[ \t]*#.*/, "", line)
	gsub(/^[ \t]+|[ \t]+$/, "", line)
	gsub(/[ \t]+/, " ", line)
	ex[line] = FNR
	next
}
# Pass 3: the sources.
FNR == 1 {
	finish()
	file = FILENAME
	split(file, parts, "/")
	dir = parts[2]
	cand = ""; inbody = 0
	if (!(dir in known)) {
		printf "%s: folder %s/ is not in the table of scripts/check-layout.sh\n", file, dir
		bad++
	}
}
{ nlines = FNR }
/^[ \t]*#[ \t]*include[ \t]*"[A-Za-z0-9_-]+\// {
	inc = $0
	sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
	to = inc; sub(/\/.*/, "", to)
	if (to == dir)
		next
	key = file " -> " inc
	if (!((dir, to) in edge))
		edge[dir, to] = file ":" FNR " includes \"" inc "\""
	if (!((dir, to) in allow)) {
		if (key in ex) {
			used[key] = 1
		} else {
			printf "%s:%d: includes \"%s\": against the direction (rule %s -> %s)\n", file, FNR, inc, dir, rule[dir]
			bad++
		}
		next
	}
	if (key in ex)
		used[key] = 1
	next
}
# A function: its header line (the last line starting at column 0 with a
# "(" and no ";") before a "{" at column 0, to the next "}" alone there.
/^[A-Za-z_].*\(/ && !/;[ \t]*$/ { cand = $0 }
/^\{/ && cand != "" { inbody = 1; start = FNR; fname = cand }
/^\}[ \t]*$/ && inbody {
	len = FNR - start + 1
	if (len > max_func) {
		name = fname; sub(/\(.*/, "", name)
		n = split(name, w, /[ \t*]+/); name = w[n]
		key = file ":" name "()"
		if (key in ex) {
			used[key] = 1
		} else {
			printf "%s:%d: function %s() is %d lines, over %d (split it at its seams)\n", file, start, name, len, max_func
			bad++
		}
	}
	inbody = 0; cand = ""
}
function finish() {
	if (file == "" || file !~ /\.c$/ || nlines <= max_file)
		return
	if (file in ex) {
		used[file] = 1
		return
	}
	printf "%s: %d lines, over %d (a file this long holds two jobs)\n", file, nlines, max_file
	bad++
}
END {
	finish()
	for (k in edge) {
		split(k, ab, SUBSEP)
		if (ab[1] > ab[2] || !((ab[2], ab[1]) in edge))
			continue
		c1 = "cycle " ab[1] " <-> " ab[2]
		c2 = "cycle " ab[2] " <-> " ab[1]
		if (c1 in ex || c2 in ex) {
			used[c1 in ex ? c1 : c2] = 1
			continue
		}
		printf "cycle: %s/ <-> %s/: %s, and %s\n", ab[1], ab[2], edge[ab[1], ab[2]], edge[ab[2], ab[1]]
		bad++
	}
	for (k in ex)
		if (!(k in used))
			printf "note: %s:%d: exception no longer needed: %s\n", exfile, ex[k], k > "/dev/stderr"
	if (bad) {
		printf "check-layout: %d breach(es) of the layout (STYLE.md); fix them, or list one with a reason in %s\n", bad, exfile
		exit 1
	}
}
' exfile="$exceptions" - "$exceptions" "${files[@]}"
