// SPDX-License-Identifier: Apache-2.0
// bench/browser.mjs: what the browser benchmarks share (serve-nav.mjs,
// serve-views.mjs): Debian's chromium headless through playwright-core
// (from tests/browser, or KILN_BROWSER_DIR; KILN_CHROMIUM for another
// browser), and percentiles of a list of times.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const browserDir = resolve(process.env.KILN_BROWSER_DIR || join(here, '../tests/browser'));
const { chromium } = createRequire(join(browserDir, 'package.json'))('playwright-core');

// The p-th percentile (nearest rank), null for no values.
export const pct = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)];
};
export const stats = (xs) => ({ n: xs.length, median: pct(xs, 50), p95: pct(xs, 95), max: xs.length ? Math.max(...xs) : null });

// The browser and a page of 1300 x 800.
export async function launch() {
  const browser = await chromium.launch({
    executablePath: process.env.KILN_CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  const page = await browser.newPage({ viewport: { width: 1300, height: 800 } });
  return { browser, page };
}
