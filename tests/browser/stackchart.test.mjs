// SPDX-License-Identifier: Apache-2.0
// kiln serve's stack chart in headless chromium: a two-phase program's
// main thread shows phase_a before phase_b along time (read back by
// hovering across the chart, as a user would), hovering shows the stack
// and the time, the wheel zooms (the URL's window and the minimap's follow),
// a drag across the minimap picks a window, and a narrow window shows a
// single sample.
//
// Usage: node stackchart.test.mjs URL SHOTDIR
//   URL: a kiln serve of a recording of tests/workloads/twophase.
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, drawnWindow, stackScan, stackSettled, withBrowser } from './lib.mjs';

const [url, shotDir] = process.argv.slice(2);
if (!url || !shotDir) {
  console.error('usage: node stackchart.test.mjs URL SHOTDIR');
  process.exit(2);
}

const hash = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));
const miniWindow = (page) => page.$eval('#sc-mini', (c) => c.dataset.window.split(',').map(Number));

await withBrowser({}, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));

  await page.goto(`${url}#v=stackchart`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await stackSettled(page);
  check(!(await page.isHidden('#stackchart-view')), 'the stack chart tab shows');
  const thread = await page.$eval('#sc-thread', (s) => s.options[s.selectedIndex].textContent);
  check(/^twophase /.test(thread), 'the busiest thread is the program\'s main thread', thread);

  // The phase row: _start, __libc_start_main, __libc_start_call_main,
  // main, then phase_a or phase_b (the depth where they are found).
  let row = -1, hits = [];
  for (let r = 2; r < 8 && row < 0; r++) {
    hits = await stackScan(page, r);
    if (hits.some((h) => /^phase_/.test(h.name))) row = r;
  }
  const names = hits.map((h) => h.name).filter((n) => /^phase_/.test(n));
  const lastA = names.lastIndexOf('phase_a'), firstB = names.indexOf('phase_b');
  check(lastA >= 0 && firstB >= 0 && lastA < firstB, 'phase_a is before phase_b along time', names.join(' '));
  const a = hits.find((h) => h.name === 'phase_a');
  check(a && /main/.test(a.text) && /\d s/.test(a.text) && /stack \(root first\)/.test(a.text),
    'hover shows the stack and the time', a && a.text);
  await page.screenshot({ path: join(shotDir, 'stackchart.png') });

  // Wheel zoom at the middle: the window narrows, in the URL, on the
  // chart and on the minimap.
  const [f0, t0] = await drawnWindow(page);
  const cb = await page.$eval('#stackchart', (c) => { const r = c.getBoundingClientRect(); return [r.left + r.width / 2, r.top + 30]; });
  await page.mouse.move(cb[0], cb[1]);
  for (let i = 0; i < 4; i++) await page.mouse.wheel(0, -200);
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).has('sx'));
  await stackSettled(page);
  const [f1, t1] = await drawnWindow(page);
  check(f1 > f0 && t1 < t0 && (t1 - f1) < (t0 - f0) / 2, 'the wheel zooms in around the pointer', [f0, t0, f1, t1]);
  const mw = await miniWindow(page);
  check(mw[0] > 0.05 && mw[1] < 0.95 && mw[1] - mw[0] < 0.6, 'the minimap shows the narrower window', mw);
  await page.screenshot({ path: join(shotDir, 'stackchart-zoom.png') });

  // A drag across the minimap from 2% of it to 80% of where phase_b
  // starts (from the server's runs: a loaded machine stretches either
  // phase in wall time): that window, with phase_a's samples alone.
  const whole = await page.evaluate(async () => (await fetch('/api/stackchart?width=100000')).json());
  const has = (r, fn) => whole.stacks[r[2]].some((f) => whole.names[whole.frames[f][0]] === fn);
  const bStart = Math.min(...whole.runs.filter((r) => has(r, 'phase_b')).map((r) => r[0]));
  const to = 0.8 * bStart / whole.end;
  const mb = await page.$eval('#sc-mini', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.top + r.height / 2, r.width]; });
  await page.mouse.move(mb[0] + 0.02 * mb[2], mb[1]);
  await page.mouse.down();
  await page.mouse.move(mb[0] + (0.02 + to) / 2 * mb[2], mb[1], { steps: 3 });
  await page.mouse.move(mb[0] + to * mb[2], mb[1], { steps: 3 });
  await page.mouse.up();
  await stackSettled(page);
  const mw2 = await miniWindow(page);
  check(Math.abs(mw2[0] - 0.02) < 0.02 && Math.abs(mw2[1] - to) < 0.02, 'a drag on the minimap picks that window', [mw2, to]);
  const names2 = (await stackScan(page, row)).map((h) => h.name);
  check(names2.includes('phase_a') && !names2.includes('phase_b'), 'before phase_b\'s start: phase_a alone', names2.join(' '));

  // A window of one millisecond at a sample: one sample drawn.
  const d = await page.evaluate(async () => (await fetch('/api/stackchart?width=2000')).json());
  const r = d.runs[Math.floor(d.runs.length / 2)];
  await page.goto(`${url}#v=stackchart&sx=${r[0]},${r[0] + 1000000}`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await stackSettled(page);
  const summary = await page.textContent('#sc-summary');
  check(/: 1 sample, 1 run drawn/.test(summary), 'zoomed to a single sample', summary);
  await page.screenshot({ path: join(shotDir, 'stackchart-one.png') });
  check(errors.length === 0, 'no console errors', errors);
});
