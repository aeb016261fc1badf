// SPDX-License-Identifier: Apache-2.0
// What every browser test of kiln shares: the TAP-like check() and its
// failure count, and headless chromium (Debian's, through playwright-core)
// in a throwaway profile directory.
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
