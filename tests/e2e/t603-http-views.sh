#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# The readable views of the CPU profile: a browser's Accept header gets
# kiln serve's page with the profile in it (the same page, saved with its
# data: flame graph, icicle, search, top table), ?format=svg the flame
# graph SVG, ?debug=1 (or ?format=text) a `kiln top` table.  Headless
# chromium, where installed, opens the endpoint as a user would: the page
# draws, shows the hot function on hover and first in its top table, and a
# click zooms.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0
BROWSER_ACCEPT='text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'
expect_code 200 "debug/pprof/profile?seconds=1" -H "Accept: $BROWSER_ACCEPT"
has "$T/headers" "Content-Type: text/html"
hasnt "$T/headers" "Content-Disposition"
has "$T/body" "^<!DOCTYPE html>"
has "$T/body" "<title>kiln: CPU profile of httpserve \(pid $SPID\) over 1 s</title>"
has "$T/body" "^window.KILN_OFFLINE = "
has "$T/body" '"hash_payload"'
# The page is whole: nothing to fetch from the program, and no call graph
# (graphviz is never loaded into it).
hasnt "$T/body" 'src="/app.js"'
has "$T/body" '"callgraph":null'
! grep -q 'libgvc\|libcgraph' /proc/$SPID/maps || fail "graphviz loaded into the program"
cp "$T/body" "$T/page.html"
# Ties go to the more specific type; explicit protobuf wins; */* is binary.
expect_code 200 "debug/pprof/profile?seconds=1" -H "Accept: text/html, */*"
has "$T/headers" "Content-Type: text/html"
expect_code 200 "debug/pprof/profile?seconds=1" -H "Accept: application/octet-stream, text/html;q=0.5"
has "$T/headers" "Content-Type: application/octet-stream"
expect_code 200 "debug/pprof/profile?seconds=1" -H "Accept: text/html;q=0, */*"
has "$T/headers" "Content-Type: application/octet-stream"

expect_code 200 "debug/pprof/profile?seconds=1&format=svg"
has "$T/headers" "Content-Type: image/svg\+xml"
has "$T/body" "^<\?xml version"
has "$T/body" "<title>hash_payload \("
expect_code 200 "debug/pprof/profile?seconds=1&format=html"
has "$T/headers" "Content-Type: text/html"
# ?format= wins over the Accept header.
expect_code 200 "debug/pprof/profile?seconds=1&format=pprof" -H "Accept: $BROWSER_ACCEPT"
has "$T/headers" "Content-Type: application/octet-stream"

expect_code 200 "debug/pprof/profile?seconds=2&debug=1"
has "$T/headers" "Content-Type: text/plain"
has "$T/body" "^Type: cpu$"
has "$T/body" "^Duration: 2"
has "$T/body" "^ +flat +flat% +sum% +cum +cum%$"
[ "$(awk '/ flat%/ { getline; print $NF; exit }' "$T/body")" = hash_payload ] ||
    { cat "$T/body"; fail "debug=1: hash_payload is not the first row"; }
has "$T/body" "%  handle_request$"
expect_code 200 "debug/pprof/profile?seconds=1&format=text"
has "$T/body" "^Type: cpu$"

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    cat > "$T/browse.mjs" <<'JS'
// Opens the endpoint in headless chromium: the browser's own Accept
// header must get kiln's page, and the page must work.
const { chromium } = await import(process.env.PW);
const url = process.argv[2];
let failures = 0;
const check = (ok, what, detail) => {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failures++;
};
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run'] });
try {
  const page = await browser.newPage({ viewport: { width: 1300, height: 500 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const resp = await page.goto(url, { timeout: 60000 });
  check(resp.status() === 200, 'status 200', resp.status());
  check((resp.headers()['content-type'] || '').startsWith('text/html'), 'an HTML page',
        resp.headers()['content-type']);
  await page.waitForSelector('body[data-ready="1"]', { state: 'attached', timeout: 60000 });
  const title = await page.title();
  check(title.startsWith('kiln: CPU profile of httpserve'), 'page title', title);
  // hash_payload's frame, from the nodes the page drew.
  const spot = await page.evaluate(() => {
    const c = document.getElementById('flame'), b = c.getBoundingClientRect();
    const i = flameData.nodes.findIndex((n) => n[0] >= 0 && flameData.names[n[0]] === 'hash_payload');
    if (i < 0) return null;
    const n = flameData.nodes[i], s = b.width / flameData.nodes[0][3];
    return { x: b.left + (n[2] + n[3] / 2) * s, y: b.top + (flameData.depth - n[1]) * 18 + 9, depth: n[1] };
  });
  check(spot !== null, 'a hash_payload frame');
  if (spot) {
    await page.mouse.move(spot.x, spot.y);
    const d = await page.evaluate(() => document.getElementById('details').textContent);
    check(/^Function: hash_payload \(/.test(d), 'hover details', d);
    await page.mouse.click(spot.x, spot.y);
    const zoomed = await page.waitForFunction(() =>
      /hash_payload/.test(new URLSearchParams(location.hash.slice(1)).get('root') || ''), null, { timeout: 30000 })
      .then(() => true, () => false);
    check(zoomed, 'click zooms into hash_payload');
  }
  await page.goto(url.replace(/#.*$/, '') + '#v=top', { timeout: 60000 });
  await page.waitForSelector('#top-table tbody tr', { state: 'attached' });
  const first = await page.locator('#top-table tbody td.name').first().textContent();
  check(first === 'hash_payload', 'the top table starts with hash_payload', first);
  check(errors.length === 0, 'no script errors', errors.join('; '));
} finally {
  await browser.close();
}
process.exit(failures ? 1 : 0);
JS
    HOME=$T PW="$KILN_SRC/tests/browser/node_modules/playwright-core/index.mjs" \
        timeout 180 node "$T/browse.mjs" "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=2" \
        > "$T/browser.txt" 2>&1 || { cat "$T/browser.txt"; fail "the browser checks failed"; }
    cat "$T/browser.txt"
else
    echo "note: chromium or playwright-core missing, browser part not run"
fi
stop_serve
echo ok
