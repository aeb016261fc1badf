// SPDX-License-Identifier: Apache-2.0
// bench/serve-nav.mjs: the stack chart and the zoom of kiln serve's page
// (issue 26, items 3 and 7) on a big profile, in headless chromium driven
// by playwright-core (bench/serve-nav.sh runs it against a kiln serve of
// the 1M-sample bench profile).
//
// Usage: node serve-nav.mjs URL ROUNDS > results.json
//
// For each view (stack chart, flame graph, call graph):
//   first paint: the page is open on another view; the clock starts as
//     the view's tab is clicked (the request) and stops at the first frame
//     after the view is drawn and nothing is in flight (the page's own
//     counters: its render generation and in-flight requests, read in a
//     zero-delay task loop); the first one of a fresh server is "cold"
//     (the server sorts the selection's samples by time once), the others
//     warm (the tab clicked again after the top table).
//   interaction: a wheel event dispatched on the view's canvas (zoom in
//     or out around its middle) to the next frame after the page redrew
//     from what it holds; and a pointer move over the stack chart to the
//     frame with its tooltip.  Then, once the zoom settles, the server's
//     answer for the new window (its Resource Timing duration).
//   JS heap: CDP Performance.getMetrics JSHeapUsedSize at the end (no
//     garbage collection forced).
import { launch, stats } from './browser.mjs';

const [url, roundsArg] = process.argv.slice(2);
const rounds = +(roundsArg || 20);

// In the page: clicks the tab and waits for the frame after the view is
// drawn (a new render generation with nothing in flight).
const clickAndWait = (sel) => new Promise((done) => {
  const g0 = generation, t0 = performance.now();
  document.querySelector(sel).click();
  const look = () => {
    if (generation > g0 && inflight === 0 && !document.body.dataset.busy) {
      requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
    } else setTimeout(look, 0);
  };
  look();
});
// In the page: a wheel event on the element's middle, to the next frame.
const wheelFrame = ([sel, dy]) => new Promise((done) => {
  const c = document.querySelector(sel), r = c.getBoundingClientRect();
  const t0 = performance.now();
  c.dispatchEvent(new WheelEvent('wheel', { deltaY: dy, clientX: r.left + r.width / 2, clientY: r.top + Math.min(40, r.height / 2), bubbles: true, cancelable: true }));
  requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
});
const moveFrame = ([sel, fx]) => new Promise((done) => {
  const c = document.querySelector(sel), r = c.getBoundingClientRect();
  const t0 = performance.now();
  c.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + fx * r.width, clientY: r.top + 18 + 5 * 16 + 8, bubbles: true }));
  requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
});
const settled = () => new Promise((done) => {
  const look = () => (inflight === 0 && !document.body.dataset.busy ? done() : setTimeout(look, 5));
  setTimeout(look, 400);      // past the zoom's settle delay (150 ms)
});
const apiTimes = (path) => performance.getEntriesByType('resource')
  .filter((e) => e.name.includes(path)).map((e) => e.duration);

const { browser, page } = await launch();
const cdp = await page.context().newCDPSession(page);
await cdp.send('Performance.enable');
const heap = async () => {
  const { metrics } = await cdp.send('Performance.getMetrics');
  return metrics.find((m) => m.name === 'JSHeapUsedSize').value;
};
const out = { url, rounds, views: {} };
await page.goto(`${url}#v=summary`);
await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 600000 });

for (const [view, canvas] of [['stackchart', '#stackchart'], ['flame', '#flame'], ['callgraph', '#cg']]) {
  const r = { first: [], wheel: [], hover: [] };
  for (let i = 0; i < Math.max(3, Math.ceil(rounds / 4)); i++) {
    await page.evaluate(clickAndWait, '#tab-top');
    r.first.push(await page.evaluate(clickAndWait, `#tab-${view}`));
  }
  await page.evaluate(() => performance.clearResourceTimings());
  for (let i = 0; i < rounds; i++) {
    // In and out again, so that the window stays in the profile's middle.
    r.wheel.push(await page.evaluate(wheelFrame, [canvas, i % 8 < 4 ? -120 : 120]));
    if (view === 'stackchart') r.hover.push(await page.evaluate(moveFrame, [canvas, (i % 10) / 10 + 0.05]));
    if (i % 4 === 3) await page.evaluate(settled);
  }
  await page.evaluate(settled);
  const api = view === 'callgraph' ? [] : await page.evaluate(apiTimes, `/api/${view === 'stackchart' ? 'stackchart' : 'flame'}?`);
  out.views[view] = { cold: r.first[0], first_warm: stats(r.first.slice(1)), wheel: stats(r.wheel),
    hover: stats(r.hover), api_after_zoom: stats(api) };
}
out.heap_mb = (await heap()) / 1048576;
out.runs_drawn = await page.evaluate(() => document.getElementById('sc-summary').textContent);
console.log(JSON.stringify(out, null, 1));
await browser.close();
