// SPDX-License-Identifier: Apache-2.0
// What every browser test of kiln shares: the TAP-like check() and its
// failure count, headless chromium (Debian's, through playwright-core)
// in a throwaway profile directory, the saved page's offline set-up and
// the stack chart's readers.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const result = { failures: 0 };

export function check(ok, what, detail) {
  if (ok) console.log(`ok - ${what}`);
  else {
    result.failures++;
    console.log(`not ok - ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
  }
}

// Runs body(context, page) in a fresh chromium, then closes it and removes
// its profile; an exception is one more failure.  Exits 0 when every check
// passed, 1 otherwise.
export async function withBrowser({ viewport = { width: 1300, height: 700 }, args = [] }, body) {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(dir, {
      executablePath: process.env.KILN_CHROMIUM || '/usr/bin/chromium',
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu',
        '--disable-background-networking', '--disable-component-update',
        '--disable-sync', '--no-first-run', ...args],
      viewport,
      timeout: 180000,
    });
    // Waits are readiness waits; the bound only ends a page that never
    // gets there, and must hold on a machine at load 40 (t995 ran out of
    // 30 s there while the same page is ready in 2 s alone).
    context.setDefaultTimeout(180000);
    const page = context.pages()[0] || await context.newPage();
    await body(context, page);
  } catch (e) {
    if (e !== null) {
      result.failures++;
      console.log(`not ok - ${e.stack || e}`);
    }
  } finally {
    if (context) await context.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(result.failures ? 1 : 0);
}

// A saved page's test: every request but file:// refused and recorded
// (network), page errors and console errors recorded (errors).
export async function offline(context, page) {
  const errors = [], network = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await context.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith('file://')) return route.continue();
    network.push(u);
    return route.abort();
  });
  return { errors, network };
}

// The stack chart's drawn window [from, to] (its canvas's data).
export const drawnWindow = (page) => page.$eval('#stackchart', (c) => [+c.dataset.from, +c.dataset.to]);

// Waits for the stack chart drawn for the URL's window (its answer in).
export async function stackSettled(page) {
  await page.waitForFunction(() => !document.body.dataset.busy && document.querySelector('#stackchart').dataset.from !== undefined);
  await page.waitForFunction(() => {
    const q = new URLSearchParams(location.hash.slice(1)), c = document.querySelector('#stackchart');
    const m = /^(\d+),(\d+)$/.exec(q.get('sx') || '');
    return !m || (Math.abs(+c.dataset.from - +m[1]) <= 1 && Math.abs(+c.dataset.to - +m[2]) <= 1);
  });
}

// Hovers across the stack chart at depth `row`: the function under the
// pointer at each x (the tooltip's first line), in order of x.
export async function stackScan(page, row) {
  const box = await page.$eval('#stackchart', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.top, r.width]; });
  const out = [];
  for (let x = 2; x < box[2] - 2; x += 6) {
    await page.mouse.move(box[0] + x, box[1] + 18 + row * 16 + 8);
    const t = await page.$eval('#tip', (e) => (e.hidden ? '' : e.textContent));
    if (t) out.push({ x, name: t.split('\n')[0], text: t });
  }
  return out;
}
