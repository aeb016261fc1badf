#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `kiln flame` on collapsed stacks: the SVG names every frame with its value
# and share, is well-formed and self-contained, is the same bytes when made
# twice, reads pprof the same way, escapes XML specials, draws an empty
# profile as "no samples", and refuses bad input with the line number.
. "$(dirname "$0")/lib.sh"

cat > "$T/shares.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_a;burn_a;burn_b 200
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
IN

# Well-formed XML, when a checker is at hand.
wellformed() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$1" ||
            fail "'$1' is not well-formed XML"
    elif command -v xmllint >/dev/null 2>&1; then
        xmllint --noout "$1" || fail "'$1' is not well-formed XML"
    fi
}

expect_status 0 "$KILN" flame "$T/shares.collapsed" -o "$T/a.svg"
has "$T/a.svg" '^<\?xml version="1.0"'
has "$T/a.svg" '<svg version="1.1" width="1200"'
has "$T/a.svg" '<title>burn_a \(800 samples, 66.67%\)</title>'
has "$T/a.svg" '<title>burn_b \(300 samples, 25.00%\)</title>'
has "$T/a.svg" '<title>burn_b \(200 samples, 16.67%\)</title>'
has "$T/a.svg" '<title>burn_c \(100 samples, 8.33%\)</title>'
has "$T/a.svg" '<title>main \(1,200 samples, 100.00%\)</title>'
has "$T/a.svg" '>Flame Graph</text>'
has "$T/a.svg" '>samples/count, total 1,200 samples</text>'
has "$T/a.svg" '>Reset Zoom</text>'
has "$T/a.svg" '>Search</text>'
wellformed "$T/a.svg"
# Self-contained: inline script and style, nothing fetched.
has "$T/a.svg" '<script type="text/ecmascript"><!\[CDATA\['
has "$T/a.svg" '<style type="text/css">'
hasnt "$T/a.svg" 'href='
[ "$(grep -o 'http' "$T/a.svg" | wc -l)" = 1 ] || fail "a URL besides the xmlns"
# burn_a spans 800/1200 of the 1180 px drawing area.
grep -q '<title>burn_a (800 samples, 66.67%)</title><rect x="10.00" y="[0-9.]*" width="786.67"' "$T/a.svg" ||
    fail "burn_a box is not 786.67 px wide at the left edge"

# Deterministic: the same input gives the same bytes.
expect_status 0 "$KILN" flame "$T/shares.collapsed" -o "$T/b.svg"
cmp -s "$T/a.svg" "$T/b.svg" || fail "two runs gave different SVGs"

# The default output name, and standard output.
( cd "$T" && "$KILN" flame -q shares.collapsed ) || fail "flame with default output failed"
cmp -s "$T/a.svg" "$T/shares.svg" || fail "default output 'shares.svg' differs"
expect_status 0 "$KILN" flame "$T/shares.collapsed" -o -
cmp -s "$T/a.svg" "$T/out" || fail "-o - differs"

# Through pprof: the same graph.
expect_status 0 "$KILN" convert "$T/shares.collapsed" -o "$T/shares.pb.gz"
expect_status 0 "$KILN" flame "$T/shares.pb.gz" -o "$T/p.svg"
has "$T/p.svg" '<title>burn_a \(800 samples, 66.67%\)</title>'
has "$T/p.svg" '<title>stage_b \(300 samples, 25.00%\)</title>'

# Title and width.
expect_status 0 "$KILN" flame "$T/shares.collapsed" --title 'db <load> & "query"' --width 600 -o "$T/t.svg"
has "$T/t.svg" '>db &lt;load&gt; &amp; &quot;query&quot;</text>'
has "$T/t.svg" '<svg version="1.1" width="600"'
wellformed "$T/t.svg"

# XML specials and C++ names.
printf '%s\n' \
    "main;operator<<(std::ostream&, char const*);it's 5" \
    'main;std::vector<int, std::allocator<int> >::push_back(int const&) 3' \
    'main;"quoted" 2' > "$T/esc.collapsed"
expect_status 0 "$KILN" flame "$T/esc.collapsed" -o "$T/esc.svg"
has "$T/esc.svg" '<title>operator&lt;&lt;\(std::ostream&amp;, char const\*\) \(5 samples, 50.00%\)'
has "$T/esc.svg" '<title>it&#39;s \(5 samples'
has "$T/esc.svg" '<title>std::vector&lt;int, std::allocator&lt;int&gt; &gt;::push_back\(int const&amp;\) \(3 samples, 30.00%\)'
has "$T/esc.svg" '<title>&quot;quoted&quot; \(2 samples'
wellformed "$T/esc.svg"

# Nothing left after filtering: a graph that says so.
expect_status 0 "$KILN" flame "$T/shares.collapsed" --focus 'no_such_function' -o "$T/e.svg"
has "$T/e.svg" '>no samples</text>'
hasnt "$T/e.svg" '<g class="f"'
wellformed "$T/e.svg"

# Bad input: exit 2, the line named, nothing written.
printf 'main;a 1\nmain;b x\n' > "$T/bad.collapsed"
expect_status 2 "$KILN" flame "$T/bad.collapsed" -o "$T/bad.svg"
has "$T/err" 'bad.collapsed'
has "$T/err" 'line 2'
[ ! -e "$T/bad.svg" ] || fail "an SVG was written for bad input"
exit 0
