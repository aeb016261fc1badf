// SPDX-License-Identifier: Apache-2.0
// Drives kiln's interactive flame graph SVG in headless chromium (Debian's
// /usr/bin/chromium through playwright-core) the way a user would: hover,
// search, click to zoom, reset.
//
// Usage: node flame.test.mjs SVG [SCREENSHOT.png]
// SVG must be kiln's flame graph of this collapsed profile (total 1200):
//   main;run;stage_a;burn_a 600
//   main;run;stage_a;burn_a;burn_b 200
//   main;run;stage_b;burn_b 300
//   main;run;stage_c;burn_c 100
// Exit status 0 when every check passes, 1 otherwise.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [svgPath, shotPath] = process.argv.slice(2);
if (!svgPath) {
  console.error('usage: node flame.test.mjs SVG [SCREENSHOT.png]');
  process.exit(2);
}

let failures = 0;
function check(ok, what, detail) {
  if (ok) {
    console.log(`ok - ${what}`);
  } else {
    failures++;
    console.log(`not ok - ${what}${detail === undefined ? '' : ': ' + detail}`);
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
    viewport: { width: 1300, height: 400 },
    timeout: 60000,
  });
  context.setDefaultTimeout(15000);
  const page = context.pages()[0] || await context.newPage();
  const errors = [];
  const foreign = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('request', (r) => {
    if (!r.url().startsWith('file:')) foreign.push(r.url());
  });

  await page.goto(pathToFileURL(resolve(svgPath)).href);
  await page.waitForFunction(() => document.readyState === 'complete');

  // Tags the <g class="f"> whose name (title up to " (") is `name`, and
  // the n-th one if several: returns its id for locators.
  async function frame(name, n = 0) {
    const id = await page.evaluate(([name, n]) => {
      const gs = [...document.querySelectorAll('g.f')].filter((g) => {
        const t = g.querySelector('title').textContent;
        return t.slice(0, t.lastIndexOf(' (')) === name;
      });
      if (!gs[n]) return null;
      const id = `t-${name}-${n}`;
      gs[n].setAttribute('id', id);
      return id;
    }, [name, n]);
    if (!id) throw new Error(`no frame named '${name}'`);
    return `#${id}`;
  }
  const text = (sel) => page.locator(sel).evaluate((e) => e.textContent.trim());
  const rectWidth = (sel) => page.locator(`${sel} rect`).evaluate((r) => +r.getAttribute('width'));

  // Basic structure.
  check(await page.locator('#title').textContent() === 'Flame Graph', 'title');
  check(await page.locator('g.f').count() === 10, 'ten frames drawn',
    await page.locator('g.f').count());

  // Hover: the details line names the frame, its value and percentage;
  // the <title> tooltip says the same.
  const burnB = await frame('burn_b', 1);		// the one under stage_b
  await page.locator(`${burnB} rect`).hover();
  let d = await text('#details');
  check(d === 'Function: burn_b (300 samples, 25.00%)', 'hover details of burn_b', d);
  check(await text(`${burnB} title`) === 'burn_b (300 samples, 25.00%)', 'tooltip of burn_b');
  const stageA = await frame('stage_a');
  await page.locator(`${stageA} rect`).hover();
  d = await text('#details');
  check(d === 'Function: stage_a (800 samples, 66.67%)', 'hover details of stage_a', d);
  await page.mouse.move(1, 1);
  check(await text('#details') === '', 'details cleared on mouse out');

  // Search: burn_b under burn_a is nested in a match and counts once:
  // 800 + 300 of 1200.
  page.once('dialog', (dlg) => dlg.accept('burn_[ab]'));
  await page.locator('#search').click();
  let m = await text('#matched');
  check(m === 'Matched: 91.67%', 'search burn_[ab] matches 91.67%', m);
  const magenta = await page.locator('g.f rect[fill="rgb(230,0,230)"]').count();
  check(magenta === 3, 'three frames highlighted (burn_a, burn_b twice)', magenta);
  check(await text('#search') === 'Reset Search', 'search button offers a reset');
  await page.locator('#search').click();
  check(await text('#matched') === '', 'search reset clears Matched');
  check(await page.locator('g.f rect[fill="rgb(230,0,230)"]').count() === 0,
    'search reset restores colours');

  // Ctrl-F opens the same search, regexes anchored and case-insensitive.
  page.once('dialog', (dlg) => dlg.accept('(?i)^STAGE_C$'));
  await page.keyboard.press('Control+f');
  m = await text('#matched');
  check(m === 'Matched: 8.33%', 'Ctrl-F search (?i)^STAGE_C$ matches 8.33%', m);
  await page.keyboard.press('Escape');
  check(await text('#matched') === '', 'Escape clears the search');

  // Click to zoom: stage_b spans the whole width (1200 - 2 * 10 px), its
  // ancestors stay greyed, unrelated frames are hidden.
  const stageB = await frame('stage_b');
  const before = await rectWidth(stageB);
  check(Math.abs(before - 295) < 0.01, 'stage_b is 25% of 1180 px wide', before);
  check(!(await page.locator('#unzoom').isVisible()), 'Reset Zoom hidden before zoom');
  await page.locator(`${stageB} rect`).click();
  let w = await rectWidth(stageB);
  check(Math.abs(w - 1180) < 0.01, 'zoomed stage_b spans the full width', w);
  const box = await page.locator(`${stageB} rect`).boundingBox();
  check(box && Math.abs(box.width - 1180) < 1, 'zoomed stage_b is 1180 px on screen',
    box && box.width);
  check(Math.abs(await rectWidth(burnB) - 1180) < 0.01, 'its child burn_b too');
  const main = await frame('main');
  check(await page.locator(main).evaluate((g) => g.classList.contains('parent')),
    'ancestor main is greyed');
  check(!(await page.locator(stageA).isVisible()), 'stage_a is hidden');
  check(await page.locator('#unzoom').isVisible(), 'Reset Zoom shown');
  check((await text(`${stageB} text`)) === 'stage_b', 'label of the zoomed frame');

  // Hover still reports the whole-profile percentage while zoomed.
  await page.locator(`${burnB} rect`).hover();
  d = await text('#details');
  check(d === 'Function: burn_b (300 samples, 25.00%)', 'hover while zoomed', d);

  // Reset zoom.
  await page.locator('#unzoom').click();
  w = await rectWidth(stageB);
  check(Math.abs(w - before) < 0.01, 'reset zoom restores stage_b width', w);
  check(await page.locator(stageA).isVisible(), 'stage_a visible again');
  check(!(await page.locator(main).evaluate((g) => g.classList.contains('parent'))),
    'main no longer greyed');
  check(!(await page.locator('#unzoom').isVisible()), 'Reset Zoom hidden again');

  // Zoom by clicking, then reset by clicking the root "all".
  await page.locator(`${stageA} rect`).click();
  check(Math.abs(await rectWidth(stageA) - 1180) < 0.01, 'zoom into stage_a');
  await page.locator(`${await frame('all')} rect`).click();
  check(Math.abs(await rectWidth(stageA) - 1180 * 800 / 1200) < 0.01,
    'clicking all resets the zoom');

  // A search given in the URL runs on load.
  await page.goto(pathToFileURL(resolve(svgPath)).href + '?s=' + encodeURIComponent('^burn_c$'));
  await page.waitForFunction(() => document.readyState === 'complete');
  m = await text('#matched');
  check(m === 'Matched: 8.33%', '?s=^burn_c$ in the URL searches on load', m);

  if (shotPath) await page.screenshot({ path: shotPath, timeout: 30000, animations: 'disabled', caret: 'initial' });
  check(errors.length === 0, 'no script errors', errors.join('; '));
  check(foreign.length === 0, 'no external requests', foreign.join(' '));
} catch (e) {
  failures++;
  console.log(`not ok - ${e.stack || e}`);
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
