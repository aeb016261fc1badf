#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's "save as one HTML file": /api/download?format=html gives the
# page with its style, script and the selection's data inlined (no
# reference to the server), which opens from file:// with the network
# refused and draws the flame graph, zooms, searches, and holds the top
# table and call graph.  A name with "</script>" in it cannot end the
# script early.  See tests/browser/saved.test.mjs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl

cat > "$T/shares.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_a;burn_a;burn_b 200
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
IN
"$KILN" top -n 0 "$T/shares.collapsed" > "$T/top.txt" || fail "kiln top"
printf 'main;evil</script><script>alert(1)</script> 5\nmain;ok 5\n' > "$T/evil.collapsed"
serve_start -q --http 127.0.0.1:0 "$T/shares.collapsed" "$T/evil.collapsed"
hdr=$(curl -s -D - -o "$T/saved.html" "${URL}api/download?format=html") || fail "download html"
echo "$hdr" | grep -qi '^content-type: text/html' || fail "type: $hdr"
echo "$hdr" | grep -qi '^content-disposition: attachment; filename="shares.collapsed.html"' || fail "name: $hdr"
has "$T/saved.html" '^window.KILN_OFFLINE = '
# Self-contained: no link to the server's files or API.
hasnt "$T/saved.html" 'src="/app.js"'
hasnt "$T/saved.html" 'src="/calltree.js"'
hasnt "$T/saved.html" 'src="/summary.js"'
hasnt "$T/saved.html" 'src="/labels.js"'
hasnt "$T/saved.html" 'src="/offline.js"'
hasnt "$T/saved.html" 'src="/zoom.js"'
hasnt "$T/saved.html" 'src="/stackchart.js"'
hasnt "$T/saved.html" 'src="/cgnav.js"'
hasnt "$T/saved.html" 'src="/transforms.js"'
hasnt "$T/saved.html" 'src="/disasm.js"'
hasnt "$T/saved.html" 'src="/heapviews.js"'
hasnt "$T/saved.html" 'href="/style.css"'
# The hostile name: escaped, one script end per script (calltree.js,
# summary.js, labels.js, offline.js, zoom.js, stackchart.js, cgnav.js,
# transforms.js, disasm.js, heapviews.js, the data, app.js).
expect_get 200 "/api/download?format=html&p=1"
cp "$T/body" "$T/evil.html"
[ "$(grep -o "</script>" "$T/evil.html" | wc -l)" -eq 12 ] ||
    fail "a name ended the script: $(grep -o '</script>' "$T/evil.html" | wc -l) script ends"
grep -qF 'evil<\/script><script>alert(1)<\/script>' "$T/evil.html" || fail "the hostile name is not escaped"
# A focus is kept in the saved data.
expect_get 200 "/api/download?format=html&focus=stage_b"
grep -q '"focus":"stage_b"' "$T/body" || fail "focus not saved"
serve_stop

if ! command -v node >/dev/null || [ ! -x /usr/bin/chromium ] ||
   [ ! -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    skip "saved page checked as text; opening it needs node, /usr/bin/chromium and playwright-core (scripts/deps.sh)"
fi
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
HOME=$T timeout 300 node "$KILN_SRC/tests/browser/saved.test.mjs" "$T/saved.html" "$T/top.txt" "$SHOTS" ||
    fail "browser checks failed"
exit 0
