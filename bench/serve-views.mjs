// SPDX-License-Identifier: Apache-2.0
// bench/serve-views.mjs: first paint of each of issue 26's views in kiln
// serve's page (call tree, inverted, summary, grouped by a label, a label
// filter, a transform) and the call tree's keyboard, in headless chromium
// driven by playwright-core; bench/serve-nav.sh runs it against the same
// kiln serve of the 1M-sample bench profile, after serve-nav.mjs.
//
// Usage: node serve-views.mjs URL ROUNDS > results.json
//
// First paint: the clock starts as the page is sent to the view's state
// (its tab clicked, or the URL's fragment set as a link or the label bar
// and the context menu set it) and stops at the first frame after the
// view is drawn with nothing in flight (serve-nav.mjs's rule).  Each
// state is a selection the server has not made yet (a new label value or
// transform each time; "again" rows come back to one it made), so every
// first paint includes the server's work.  Keyboard: ArrowDown (the next
// row) and ArrowRight (open it: a request for its children where they
// are not held) on the call tree, to the frame after it is drawn.
import { launch, stats } from './browser.mjs';

const [url, roundsArg] = process.argv.slice(2);
const rounds = +(roundsArg || 20);

// In the page: starts the change, then waits for the frame after the
// view is drawn (a new render generation with nothing in flight).
const changeAndWait = ([how, arg]) => new Promise((done) => {
  const g0 = generation, t0 = performance.now();
  if (how === 'hash' && location.hash === '#' + arg) { done(0); return; }
  if (how === 'click') document.querySelector(arg).click();
  else if (how === 'hash') location.hash = arg;
  else document.querySelector('#ct-table').dispatchEvent(new KeyboardEvent('keydown', { key: arg, bubbles: true, cancelable: true }));
  // A key redraws the table without a new generation: its own request,
  // if any, is in flight by now.
  const drawn = () => how === 'key' || generation > g0;
  const look = () => {
    if (drawn() && inflight === 0 && !document.body.dataset.busy) {
      requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
    } else setTimeout(look, 0);
  };
  look();
});

const get = async (path) => (await fetch(url + path)).json();
const labels = await get('api/labels?n=40');
const threads = (labels.keys.find((k) => k.key === 'thread') || { values: [] }).values.map((v) => v[0]);
const top = (await get('api/top?n=60')).rows.map((r) => r.name);
const n = Math.max(3, Math.ceil(rounds / 4));
if (threads.length < n + 1 || top.length < 2 * n) throw new Error(`too few threads (${threads.length}) or functions (${top.length}) for ${n} rounds`);
const enc = (s) => encodeURIComponent(s.replace(/[\\;/]/g, '\\$&'));

const { browser, page } = await launch();
await page.goto(`${url}#v=top`);
await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 600000 });
const paint = (how, arg) => page.evaluate(changeAndWait, [how, arg]);
const home = () => paint('hash', 'v=top');

const out = { url, rounds, views: {} };
const rows = {
  // name: the state for round i (a new selection each round where it says so)
  'call tree (tab)': () => ['click', '#tab-calltree'],
  'call tree, inverted': () => ['hash', 'v=calltree&rev=1'],
  'summary (tab)': () => ['click', '#tab-summary'],
  'flame, grouped by thread': () => ['hash', 'v=flame&g=thread'],
  'call tree, grouped by pid': () => ['hash', 'v=calltree&g=pid'],
  'flame, one thread (new each time)': (i) => ['hash', `v=flame&lf=thread%3D${threads[i + 1]}`],
  'call tree, a thread dropped (new each time)': (i) => ['hash', `v=calltree&lf=thread!%3D${threads[i + 1]}`],
  'flame, merge a function (new each time)': (i) => ['hash', `v=flame&tf=mf:${enc(top[i])}`],
  'call tree, focus on a function (new each time)': (i) => ['hash', `v=calltree&tf=ff:${enc(top[n + i])}`],
  'flame, collapse a library': () => ['hash', 'v=flame&tf=cl:' + enc('/usr/lib/x86_64-linux-gnu/libc.so.6')],
};
for (const [name, state] of Object.entries(rows)) {
  const xs = [];
  for (let i = 0; i < n; i++) {
    await home();
    xs.push(await paint(...state(i)));
  }
  out.views[name] = { first: xs[0], all: stats(xs) };
}
// The call tree's keyboard, from its first row.
await paint('click', '#tab-calltree');
const keys = { down: [], right: [] };
for (let i = 0; i < rounds; i++) {
  keys.right.push(await paint('key', 'ArrowRight'));
  keys.down.push(await paint('key', 'ArrowDown'));
}
out.keys = { down: stats(keys.down), right: stats(keys.right) };
const cdp = await page.context().newCDPSession(page);
await cdp.send('Performance.enable');
const { metrics } = await cdp.send('Performance.getMetrics');
out.heap_mb = metrics.find((m) => m.name === 'JSHeapUsedSize').value / 1048576;
console.log(JSON.stringify(out, null, 1));
await browser.close();
