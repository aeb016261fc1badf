#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `kiln flame --reverse` draws leaf-rooted stacks top-down (an icicle) and
# `--diff BASE` colours frames red where their share grew, blue where it
# shrank, neutral where it stayed, with both values in the tooltip.
. "$(dirname "$0")/lib.sh"

cat > "$T/new.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
main;other;burn_a 200
IN
# The base: burn_a had 30%, burn_b 60%, burn_c 10%.
cat > "$T/base.collapsed" <<'IN'
main;run;stage_a;burn_a 300
main;run;stage_b;burn_b 600
main;run;stage_c;burn_c 100
IN

# The <g> of the frame whose title starts with "$2 (" in SVG $1.
frame() { grep -o "<g class=\"f\"[^>]*><title>$2 ([^<]*</title><rect [^>]*>" "$1" | head -1; }
# Its fill as "R G B".
fill_of() { frame "$1" "$2" | sed -n 's/.*fill="rgb(\([0-9]*\),\([0-9]*\),\([0-9]*\))".*/\1 \2 \3/p'; }
y_of() { frame "$1" "$2" | sed -n 's/.* y="\([0-9.]*\)".*/\1/p'; }

expect_status 0 "$KILN" flame --reverse "$T/new.collapsed" -o "$T/r.svg"
has "$T/r.svg" '>Icicle Graph</text>'
# burn_a (800 of 1200) is a child of the root, drawn below "all" (top-down).
frame "$T/r.svg" burn_a | grep -q 'data-d="1"' || fail "burn_a is not at depth 1 when reversed"
has "$T/r.svg" '<title>burn_a \(800 samples, 66.67%\)'
# Its callers are its children: other (200) and stage_a (600).
has "$T/r.svg" '<title>other \(200 samples, 16.67%\)'
has "$T/r.svg" '<title>stage_a \(600 samples, 50.00%\)'
ya=$(y_of "$T/r.svg" all); yb=$(y_of "$T/r.svg" burn_a); ym=$(y_of "$T/r.svg" main)
awk -v a="$ya" -v b="$yb" -v m="$ym" 'BEGIN { exit !(a < b && b < m) }' ||
    fail "reversed rows not top-down: all y=$ya, burn_a y=$yb, main y=$ym"
# Normal orientation: the root at the bottom.
expect_status 0 "$KILN" flame "$T/new.collapsed" -o "$T/n.svg"
ya=$(y_of "$T/n.svg" all); ym=$(y_of "$T/n.svg" main)
awk -v a="$ya" -v m="$ym" 'BEGIN { exit !(a > m) }' || fail "flame rows not bottom-up"

# Differential: new (stage_a 50%, burn_c 8.33%) against the base.
sed '/other/d' "$T/new.collapsed" > "$T/new2.collapsed"
expect_status 0 "$KILN" flame "$T/new2.collapsed" --diff "$T/base.collapsed" -o "$T/d.svg"
has "$T/d.svg" '>Differential Flame Graph</text>'
has "$T/d.svg" 'base total 1,000 samples'
has "$T/d.svg" '<title>burn_a \(600 samples, 60.00%; base 300 samples, 30.00%; \+30.00%\)</title>'
has "$T/d.svg" '<title>burn_b \(300 samples, 30.00%; base 600 samples, 60.00%; -30.00%\)</title>'
has "$T/d.svg" '<title>burn_c \(100 samples, 10.00%; base 100 samples, 10.00%; \+0.00%\)</title>'
read -r r g b <<< "$(fill_of "$T/d.svg" burn_a)"
[ "$r" -gt 200 ] && [ "$g" -lt 100 ] && [ "$b" -lt 100 ] || fail "burn_a grew but is rgb($r,$g,$b), not red"
read -r r g b <<< "$(fill_of "$T/d.svg" burn_b)"
[ "$b" -gt 200 ] && [ "$r" -lt 100 ] || fail "burn_b shrank but is rgb($r,$g,$b), not blue"
read -r r g b <<< "$(fill_of "$T/d.svg" burn_c)"
[ "$r" = "$g" ] && [ "$g" = "$b" ] || fail "burn_c unchanged but is rgb($r,$g,$b), not neutral"
# Widths come from the new profile: burn_a is 60% of 1180 px.
frame "$T/d.svg" burn_a | grep -q 'width="708.00"' || fail "burn_a width is not from the new profile"

# The same profile against itself: everything neutral.
expect_status 0 "$KILN" flame "$T/new2.collapsed" --diff "$T/new2.collapsed" -o "$T/same.svg"
grep -o 'fill="rgb([0-9]*,[0-9]*,[0-9]*)"' "$T/same.svg" | sort -u > "$T/fills"
[ "$(wc -l < "$T/fills")" = 1 ] || { cat "$T/fills" >&2; fail "a profile against itself is not all neutral"; }

# A heap that shrank (2000 B -> 1000 B): sizes are compared by value by
# default, as go tool pprof -base subtracts, so site_a (1000 -> 900) is a
# loss, not the 50% -> 90% share gain --normalize shows; CPU samples above
# compare shares, and --absolute makes them compare values.
MKPPROF_TYPE=inuse_space/bytes python3 "$KILN_SRC/tests/e2e/mkpprof.py" "$T/hb.pb.gz" \
    site_a=a.c:1=1000 site_b=b.c:2=1000
MKPPROF_TYPE=inuse_space/bytes python3 "$KILN_SRC/tests/e2e/mkpprof.py" "$T/hn.pb.gz" \
    site_a=a.c:1=900 site_b=b.c:2=100
expect_status 0 "$KILN" flame "$T/hn.pb.gz" --diff "$T/hb.pb.gz" -o "$T/h.svg"
has "$T/h.svg" '<title>site_a \(900 B, 90.00%; base 1,000 B; -100 B\)</title>'
has "$T/h.svg" 'red: grew, blue: shrank<'
read -r r g b <<< "$(fill_of "$T/h.svg" site_a)"
[ "$b" -gt "$r" ] || fail "site_a shrank by value but is rgb($r,$g,$b), not blue"
expect_status 0 "$KILN" flame "$T/hn.pb.gz" --diff "$T/hb.pb.gz" --normalize -o "$T/hs.svg"
has "$T/hs.svg" '<title>site_a \(900 B, 90.00%; base 1,000 B, 50.00%; \+40.00%\)</title>'
read -r r g b <<< "$(fill_of "$T/hs.svg" site_a)"
[ "$r" -gt 200 ] && [ "$b" -lt 100 ] || fail "site_a's share grew but is rgb($r,$g,$b), not red"
expect_status 0 "$KILN" flame "$T/new.collapsed" --diff "$T/base.collapsed" --absolute -o "$T/da.svg"
has "$T/da.svg" '<title>burn_c \(100 samples, 8.33%; base 100 samples; \+0 samples\)</title>'
exit 0
