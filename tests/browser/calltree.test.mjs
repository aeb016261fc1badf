// SPDX-License-Identifier: Apache-2.0
// kiln serve's call tree view in headless chromium: it opens on the hot
// path, every function's totals (summed over its outermost nodes) equal
// kiln top --cum's cum, the inverted tree's first level equals kiln top's
// flat (leaf-rooted), the keyboard moves and opens, the selected node is in
// the URL and a link reproduces it, the context menu's transforms (merge,
// drop) work through the stack transforms (tf=), focus is honoured.
//
// Usage: node calltree.test.mjs URL TOP.txt SHOTDIR
//   URL: a kiln serve of this collapsed profile (total 1200):
//     main;run;stage_a;burn_a 600
//     main;run;stage_a;burn_a;burn_b 200
//     main;run;stage_b;burn_b 300
//     main;run;stage_c;burn_c 100
//   TOP.txt: `kiln top -n 0 --cum` of the same file.
// Exit status 0 when every check passes, 1 otherwise.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const [url, topPath, shotDir] = process.argv.slice(2);
if (!url || !topPath || !shotDir) {
  console.error('usage: node calltree.test.mjs URL TOP.txt SHOTDIR');
  process.exit(2);
}

// kiln top's rows: name -> { flat, cum }.
const top = new Map();
for (const line of readFileSync(topPath, 'utf8').split('\n')) {
  const m = line.match(/^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+)$/);
  if (m) top.set(m[3], { flat: +m[1], cum: +m[2] });
}

// The drawn rows: path, depth (from the indent), name, total, self, open.
const rows = (page) => page.$$eval('#ct-table tbody tr[data-path]', (trs) => trs.map((tr) => ({
  path: tr.dataset.path,
  name: tr.querySelector('td.name').lastChild.textContent,
  total: tr.cells[0].textContent, pct: tr.cells[1].textContent,
  self: tr.cells[2].textContent, twisty: tr.querySelector('.twisty').textContent,
  sel: tr.classList.contains('sel'),
})));
const num = (s) => +s.replace(/ samples$/, '');
const selected = async (page) => (await rows(page)).find((r) => r.sel);

await withBrowser({}, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  check(top.size === 8, 'kiln top --cum lists the 8 functions', [...top.keys()]);

  await page.goto(`${url}#v=calltree`);
  await page.waitForSelector('#ct-table tbody tr[data-path]');
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  let r = await rows(page);
  check(r.map((x) => x.name).join(' ') === 'main run stage_a burn_a burn_b stage_b stage_c',
    'opens on the hot path (main, run, stage_a, burn_a, burn_b; siblings heaviest first)', r.map((x) => x.name));
  const s = await selected(page);
  check(s && s.path === 'main;run;stage_a;burn_a;burn_b', 'the hot path\'s end is selected', s);
  check(r[2].pct === '66.67%' && r[0].pct === '100.00%', 'total% is the share of the selection', r.map((x) => x.pct));
  await page.screenshot({ path: join(shotDir, 'calltree-hot.png') });

  // Open everything, then sum each function's outermost nodes.
  for (let i = 0; i < 20; i++) {
    const closed = await page.$('#ct-table tbody tr[data-path] .twisty:text-is("▸")');
    if (!closed) break;
    await closed.click();
    await page.waitForFunction((n) => document.querySelectorAll('#ct-table tbody tr[data-path]').length > n, r.length);
    r = await rows(page);
  }
  const cum = new Map(), flat = new Map();
  for (const x of r) {
    const names = x.path.split(';');
    if (names.indexOf(x.name) === names.length - 1) cum.set(x.name, (cum.get(x.name) || 0) + num(x.total));
    if (x.self !== '—') flat.set(x.name, (flat.get(x.name) || 0) + num(x.self));
  }
  let same = cum.size === top.size;
  for (const [k, v] of top) if (cum.get(k) !== v.cum || (flat.get(k) || 0) !== v.flat) same = false;
  check(same, 'the whole tree\'s totals equal kiln top --cum (cum and flat per function)',
    { tree: [...cum], self: [...flat], top: [...top] });

  // The keyboard: up, left (close), right (open), and the URL follows.
  await page.focus('#ct-table');
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowDown');
  check((await selected(page)).path === 'main;run', 'ArrowDown selects the next row');
  check(decodeURIComponent(new URL(page.url()).hash).includes('ct=main;run'), 'the selection is in the URL', page.url());
  await page.keyboard.press('ArrowLeft');
  check((await rows(page)).length === 2, 'ArrowLeft closes the node', (await rows(page)).length);
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  check((await selected(page)).path === 'main;run;stage_a', 'ArrowRight opens, then goes to the first child');
  await page.screenshot({ path: join(shotDir, 'calltree-keys.png') });

  // A link reproduces the selection (its ancestors are fetched and opened).
  const link = `${url}#v=calltree&ct=${encodeURIComponent('main;run;stage_b;burn_b')}`;
  const p2 = await context.newPage();
  await p2.goto(link);
  await p2.waitForFunction(() => document.querySelector('#ct-table tr.sel'));
  const s2 = await selected(p2);
  check(s2 && s2.path === 'main;run;stage_b;burn_b' && num(s2.total) === 300, 'a link opens on its selected node', s2);
  await p2.close();

  // Inverted: the leaf-rooted tree's first level is kiln top's flat.
  await page.click('#ct-reverse');
  await page.waitForFunction(() => document.querySelector('#ct-summary').textContent.startsWith('inverted'));
  r = await rows(page);
  const first = r.filter((x) => !x.path.includes(';'));
  check(first.map((x) => `${x.name}=${num(x.total)}/${num(x.self)}`).join(' ') ===
    [...top].filter(([, v]) => v.flat).map(([k, v]) => `${k}=${v.flat}/${v.flat}`).join(' '),
  'inverted: leaf functions first, total = self = kiln top\'s flat, heaviest first', first);
  const hot = r.filter((x) => x.path.startsWith('burn_a;')).map((x) => x.name).join(' ');
  check(hot === 'stage_a run main', 'inverted opens on the hot leaf\'s callers', hot);
  await page.screenshot({ path: join(shotDir, 'calltree-inverted.png') });

  // The context menu's transforms: merge burn_a (tf=mf:burn_a): its time
  // goes to stage_a, and burn_b under it moves up.
  await page.goto(`${url}#v=calltree`);
  await page.waitForFunction(() => document.querySelector('#ct-table tr[data-path="main;run;stage_a;burn_a"]'));
  await page.click('#ct-table tr[data-path="main;run;stage_a;burn_a"] td.name', { button: 'right' });
  await page.waitForSelector('#ct-menu:not([hidden])');
  const items = await page.$$eval('#ct-menu a', (as) => as.map((a) => a.dataset.act));
  check(items.join(' ') === 'mf mcn f ff rec drec df flame sandwich disasm open', 'the context menu lists the transforms', items);
  await page.screenshot({ path: join(shotDir, 'calltree-menu.png') });
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => !document.querySelector('#ct-table tr[data-path="main;run;stage_a;burn_a"]') &&
    document.querySelector('#ct-table tr[data-path="main;run;stage_a"]'));
  check(new URLSearchParams(new URL(page.url()).hash.slice(1)).get('tf') === 'mf:burn_a', 'merge sets tf=mf:burn_a', page.url());
  r = await rows(page);
  const sa = r.find((x) => x.path === 'main;run;stage_a');
  check(sa && num(sa.total) === 800 && num(sa.self) === 600, 'merged: stage_a keeps 800, 600 of it its own', sa);
  check(r.some((x) => x.path === 'main;run;stage_a;burn_b' && num(x.total) === 200), 'merged: burn_b is stage_a\'s child', r.map((x) => x.path));
  // Menu key on the selected row, then "drop" stage_c's samples: the
  // second transform of the list.
  await page.click('#ct-table tr[data-path="main;run;stage_c"] td.name');
  await page.keyboard.press('ContextMenu');
  await page.waitForSelector('#ct-menu:not([hidden])');
  for (let k = 0; k < items.indexOf('df'); k++) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#ct-summary').textContent.includes('total 1100'));
  check(new URLSearchParams(new URL(page.url()).hash.slice(1)).get('tf') === 'mf:burn_a;df:stage_c', 'drop adds df:stage_c to tf', page.url());

  // Focus (the selection's filters) is honoured: only burn_b's stacks
  // through stage_b remain.
  await page.goto(`${url}#v=calltree&focus=stage_b`);
  await page.waitForFunction(() => document.querySelector('#ct-summary').textContent.includes('total 300'));
  r = await rows(page);
  check(r.length && num(r[0].total) === 300 && r[0].pct === '100.00%', 'focus: the tree of the focused samples only', r);
  check(errors.length === 0, 'no console errors', errors);
});
