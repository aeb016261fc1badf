# SPDX-License-Identifier: Apache-2.0
# libkiln(7) from docs/agent.md and docs/http.md (their own text, a second
# rendering of it): the preamble and "Variables" of the first, the
# preamble, "Addresses" and "Endpoints" of the second; the rest of each is
# left to the docs.  A small Markdown subset: headings, paragraphs,
# indented code, "- " lists, tables (a row: .TP, the first cell as the
# tag, middle cells in parentheses), `code`, **bold**, *italic*, links.
#   awk -v version=X.Y.Z -f md2man.awk docs/agent.md docs/http.md
BEGIN {
	print ".\\\" Generated from docs/agent.md and docs/http.md by cmake/md2man.awk."
	print ".TH LIBKILN 7 \"\" \"kiln " version "\" \"kiln manual\""
	print ".SH NAME"
	print "libkiln \\- kiln's in\\-process profiling agent: environment and HTTP endpoints"
	print ".SH SYNOPSIS"
	print ".nf"
	print "LD_PRELOAD=libkiln.so KILN_CPU=FILE program"
	print "LD_PRELOAD=\"libkiln\\-malloc.so libkiln.so\" KILN_HEAP=PREFIX program"
	print "LD_PRELOAD=libkiln.so KILN_HTTP=ADDR program"
	print "cc ... $(pkg\\-config \\-\\-cflags \\-\\-libs kiln)"
	print ".fi"
}
FNR == 1 { file++; keep = 1; sect = file == 1 ? "DESCRIPTION" : "HTTP ENDPOINTS"; para = 0; code = 0 }
# Headings choose what is kept.
/^# / { next }
/^## / {
	endcode()
	h = substr($0, 4)
	keep = (file == 1 && h ~ /^Variables/) || (file == 2 && h ~ /^(Addresses|Endpoints)/)
	if (keep)
		print (file == 1 ? ".SH ENVIRONMENT" : ".SS " esc(h))
	para = 0
	next
}
/^### / { endcode(); if (keep) print ".SS " esc(substr($0, 5)); para = 0; next }
!keep { next }
FNR > 1 && sect != "" && !/^$/ { print ".SH " sect; sect = "" }
/^$/ { endcode(); para = 0; next }
/^    / && (code || !para) {
	if (!code) { print ".PP\n.RS 4\n.nf"; code = 1 }
	print lead(esc(substr($0, 5)))
	next
}
/^\|[-| ]+\|$/ { next }
/^\| / {
	line = substr($0, 3, length($0) - 4)
	n = split(line, c, / \| /)
	if (c[1] ~ /^(variable|path)$/) next     # the header row
	tag = "\\fB" inl(c[1]) "\\fR"
	mid = ""
	for (i = 2; i < n; i++)
		if (c[i] != "")
			mid = mid (mid == "" ? "" : ", ") inl(c[i])
	if (mid != "")
		tag = tag " (" mid ")"
	print ".TP\n" lead(tag) "\n" lead(inl(c[n]))
	para = 1
	next
}
/^- / { print ".IP \\(bu 2\n" lead(inl(substr($0, 3))); para = 1; next }
{
	if (!para) { print ".PP"; para = 1 }
	sub(/^ +/, "")
	print lead(inl($0))
}
END { endcode(); print ".SH SEE ALSO\nkiln(1), kiln\\-record(1), kiln\\-heap(1); /usr/share/doc/kiln/" }

function endcode() { if (code) { print ".fi\n.RE"; code = 0 } }
function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
function lead(s) { if (s ~ /^[.']/) s = "\\&" s; return s }
# Inline Markdown: escape first, then fonts (their backslashes stay).
function inl(s,    out, i, ch, t) {
	s = esc(s)
	while (match(s, /\[[^]]*\]\([^)]*\)/)) {
		t = substr(s, RSTART + 1)
		t = substr(t, 1, index(t, "]") - 1)
		s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
	}
	while (match(s, /`[^`]*`/))
		s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" substr(s, RSTART + RLENGTH)
	while (match(s, /\*\*[^*]+\*\*/))
		s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 2, RLENGTH - 4) "\\fR" substr(s, RSTART + RLENGTH)
	while (match(s, /\*[^* ][^*]*\*/))
		s = substr(s, 1, RSTART - 1) "\\fI" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" substr(s, RSTART + RLENGTH)
	return s
}
