// SPDX-License-Identifier: Apache-2.0
// Opens kiln's call graph SVG (drawn in process by graphviz's library) in
// headless chromium (Debian's /usr/bin/chromium through playwright-core)
// and checks what a user sees: the function names as text, one node box
// per function, the edges with their percentages, a dashed edge where
// frames were removed, the tooltips, and no script errors or requests.
//
// Usage: node callgraph.test.mjs SVG NAME... [--dashed] [--shot PNG]
// Exit status 0 when every check passes, 1 otherwise.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const svgPath = args.shift();
let shotPath = null;
let wantDashed = false;
const names = [];
while (args.length) {
  const a = args.shift();
  if (a === '--shot') shotPath = args.shift();
  else if (a === '--dashed') wantDashed = true;
  else names.push(a);
}
if (!svgPath || !names.length) {
  console.error('usage: node callgraph.test.mjs SVG NAME... [--dashed] [--shot PNG]');
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
    viewport: { width: 1400, height: 900 },
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

  const info = await page.evaluate(() => {
    const nodes = [...document.querySelectorAll('g.node')].map((g) => {
      const texts = [...g.querySelectorAll('text')].map((t) => t.textContent);
      const shape = g.querySelector('polygon, path');
      const box = shape ? shape.getBoundingClientRect() : null;
      const title = g.querySelector('a') ? g.querySelector('a').getAttribute('xlink:title') ||
        g.querySelector('a').getAttribute('title') : null;
      return { texts, w: box ? box.width : 0, h: box ? box.height : 0, title };
    });
    const edges = [...document.querySelectorAll('g.edge')].map((g) => ({
      label: [...g.querySelectorAll('text')].map((t) => t.textContent).join(' '),
      dashed: !!g.querySelector('path[stroke-dasharray]'),
    }));
    return { nodes, edges, root: document.documentElement.tagName };
  });
  check(info.root === 'svg', 'the document is an SVG', info.root);
  for (const name of names) {
    const n = info.nodes.filter((x) => x.texts[0] === name);
    check(n.length === 1, `one node box shows ${name}`, `${n.length} found`);
    if (n.length === 1) {
      check(n[0].w > 10 && n[0].h > 10, `${name}'s box is drawn`, `${n[0].w}x${n[0].h}`);
      check(n[0].texts.some((t) => /^total \d+\.\d\d% /.test(t)) &&
            n[0].texts.some((t) => /^self \d+\.\d\d% /.test(t)),
            `${name} shows its total and self percentages`, n[0].texts.join(' | '));
      const visible = await page.getByText(name, { exact: true }).first().isVisible();
      check(visible, `${name} is visible`);
    }
  }
  check(info.edges.length > 0 && info.edges.every((e) => /^\s*\d+\.\d\d%$/.test(e.label)),
    'every edge is labelled with a percentage', info.edges.map((e) => e.label).join(','));
  if (wantDashed) check(info.edges.some((e) => e.dashed), 'a residual edge is drawn dashed');
  check(info.nodes.some((n) => n.texts.some((t) => /^Showing \d+ nodes accounting for/.test(t))),
    'the legend is shown');

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
