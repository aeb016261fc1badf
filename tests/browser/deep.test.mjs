// SPDX-License-Identifier: Apache-2.0
// kiln serve's Flame tab on a profile whose stacks are deeper than the
// window is tall: the page opens on the roots (the bottom row of the
// flame graph, `main`), not on the empty top of the deepest stacks; the
// icicle starts at the top and stays there.  An empty profile, and a
// selection that leaves nothing, say why instead of a blank canvas.
//
// Usage: node deep.test.mjs URL SHOTDIR
//   URL: a kiln serve of a collapsed profile of stacks 200 frames deep
//   under main (input 0) and of a profile with no samples (input 1).
// Exit status 0 when every check passes, 1 otherwise.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [url, shotDir] = process.argv.slice(2);
if (!url || !shotDir) {
  console.error('usage: node deep.test.mjs URL SHOTDIR');
  process.exit(2);
}
let failures = 0;
function check(ok, what, detail) {
  if (ok) console.log(`ok - ${what}`);
  else {
    failures++;
    console.log(`not ok - ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
  }
}

const userDataDir = mkdtempSync(join(tmpdir(), 'kiln-chromium-'));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.KILN_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu',
      '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run'],
    viewport: { width: 1000, height: 600 },
    timeout: 60000,
  });
  context.setDefaultTimeout(30000);
  const page = context.pages()[0] || await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  async function open(hash) {
    await page.goto('about:blank');
    await page.goto(url + hash);
    await page.waitForSelector('body[data-ready="1"]', { state: 'attached' });
  }
  // Where the canvas is against the window, once drawn.
  const where = () => page.evaluate(() => {
    const r = document.getElementById('flame').getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, height: r.height, win: window.innerHeight };
  });

  await open('#v=flame');
  let w = await where();
  check(w.height > 2 * w.win, 'the flame graph is taller than the window', w);
  check(w.bottom <= w.win && w.bottom > 0, 'the root row is in view when the page opens', w);
  await page.screenshot({ path: join(shotDir, 'deep-flame.png') });

  await open('#v=icicle');
  w = await where();
  check(w.top >= 0 && w.top < w.win, 'the icicle opens on its top row (the roots)', w);
  const emptyText = () => page.evaluate(() => {
    const e = document.getElementById('flame-empty');
    return e.hidden ? '' : e.textContent;
  });
  await open('#v=flame');
  check(await emptyText() === '', 'no sentence over a drawn flame graph');
  await open('#v=flame&p=1');
  check((await emptyText()).startsWith('No samples in this profile'), 'an empty profile says why', await emptyText());
  await open('#v=flame&focus=no_such_function');
  check((await emptyText()).startsWith('No samples in this selection'), 'an empty selection says why', await emptyText());
  check(errors.length === 0, 'no page errors', errors);
} catch (e) {
  failures++;
  console.log(`not ok - ${e}`);
} finally {
  if (context) await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
process.exit(failures ? 1 : 0);
