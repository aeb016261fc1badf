// SPDX-License-Identifier: Apache-2.0
// kiln serve's flame graph navigation in headless chromium: left-heavy
// order puts the heaviest sibling first; the wheel zooms around the
// pointer (the URL's window, the nodes asked for and the minimap follow);
// a drag across the minimap picks a window; a click zoom starts whole.
//
// Usage: node flamenav.test.mjs URL SHOTDIR
//   URL: a kiln serve of this folded profile:
//     main;aaa_light 1   main;mmm_mid 2   main;zzz_heavy 5   main;zzz_heavy;deep 2
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const [url, shotDir] = process.argv.slice(2);
if (!url || !shotDir) {
  console.error('usage: node flamenav.test.mjs URL SHOTDIR');
  process.exit(2);
}

const hash = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));
const miniWindow = (page) => page.$eval('#flame-mini', (c) => (c.dataset.window || '0,1').split(',').map(Number));
// The frame named at fraction fx of the icicle's width, row `row` (0: all).
async function nameAt(page, fx, row) {
  const b = await page.$eval('#flame', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.top, r.width]; });
  await page.mouse.move(b[0] + fx * b[2], b[1] + row * 18 + 9);
  const t = await page.$eval('#tip', (e) => (e.hidden ? '' : e.textContent));
  return t.split(' ')[0];
}
const idle = (page) => page.waitForFunction(() => !document.body.dataset.busy);
// nameAt once the drawing has caught up: a new window's nodes come from
// the server and are drawn a frame later (a loaded machine: after the
// page went idle); tries for up to 30 s, returns the last name seen.
async function nameWhen(page, fx, row, want) {
  let name = '';
  for (let i = 0; i < 300; i++) {
    name = await nameAt(page, fx, row);
    if (name === want) break;
    await page.waitForTimeout(100);
  }
  return name;
}

await withBrowser({}, async (context, page) => {
  const errors = [];
  const asked = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('request', (r) => { if (r.url().includes('/api/flame?')) asked.push(new URL(r.url()).searchParams); });

  await page.goto(`${url}#v=icicle`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  check(await nameAt(page, 0.02, 2) === 'aaa_light', 'by name: aaa_light is leftmost', await nameAt(page, 0.02, 2));
  await page.check('#heavy');
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('lh') === '1');
  await idle(page);
  check(await nameAt(page, 0.02, 2) === 'zzz_heavy', 'left-heavy: the heaviest sibling first', await nameAt(page, 0.02, 2));
  check(await nameAt(page, 0.98, 2) === 'aaa_light', 'left-heavy: the lightest last', await nameAt(page, 0.98, 2));
  check(asked.length > 0 && asked[asked.length - 1].get('heavy') === '1', 'the server is asked for the order');
  await page.screenshot({ path: join(shotDir, 'flame-heavy.png') });

  // Wheel at the right edge (aaa_light): the window narrows to it.
  const b = await page.$eval('#flame', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.top, r.width]; });
  await page.mouse.move(b[0] + b[2] - 3, b[1] + 9);
  for (let i = 0; i < 5; i++) await page.mouse.wheel(0, -300);
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).has('fx'));
  await idle(page);
  const fx = hash(page).get('fx').split(',').map(Number);
  check(fx[0] > 0.5 && fx[1] > 0.99 && fx[1] - fx[0] < 0.2, 'the wheel zooms in at the pointer: the window is in the URL', fx);
  const last = asked[asked.length - 1];
  check(last && +last.get('x0') === fx[0] && +last.get('x1') === fx[1], 'the server is asked for that window only',
    last && last.toString());
  const mw = await miniWindow(page);
  check(Math.abs(mw[0] - fx[0]) < 1e-4 && Math.abs(mw[1] - fx[1]) < 1e-4, 'the minimap shows the window', mw);
  const across = await nameWhen(page, 0.5, 2, 'aaa_light');
  check(across === 'aaa_light', 'the window shows aaa_light across', across);
  await page.screenshot({ path: join(shotDir, 'flame-zoom.png') });

  // A drag across the minimap from 0% to 50%: zzz_heavy fills it.
  const m = await page.$eval('#flame-mini', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.top + r.height / 2, r.width]; });
  await page.mouse.move(m[0] + 1, m[1]);
  await page.mouse.down();
  await page.mouse.move(m[0] + 0.3 * m[2], m[1], { steps: 3 });
  await page.mouse.move(m[0] + 0.5 * m[2], m[1], { steps: 3 });
  await page.mouse.up();
  await page.waitForFunction(() => /^0\.0/.test(new URLSearchParams(location.hash.slice(1)).get('fx') || ''));
  await idle(page);
  const mw2 = await miniWindow(page);
  check(mw2[0] < 0.01 && Math.abs(mw2[1] - 0.5) < 0.01, 'a drag on the minimap picks that window', mw2);
  const filled = await nameWhen(page, 0.5, 2, 'zzz_heavy');
  check(filled === 'zzz_heavy', 'zzz_heavy fills it', filled);

  // A click zoom (a new root) starts with all of it in view.
  await nameAt(page, 0.5, 2);
  await page.mouse.click(b[0] + 0.5 * b[2], b[1] + 2 * 18 + 9);
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('root') === 'main;zzz_heavy');
  check(!hash(page).has('fx'), 'a click zoom resets the window', page.url());
  check(errors.length === 0, 'no console errors', errors);
});
