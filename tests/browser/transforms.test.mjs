// SPDX-License-Identifier: Apache-2.0
// kiln serve's stack transforms in headless chromium, on a kiln record of
// the callgraph workload (main -> compute -> fib -> fib -> fib, helper
// from compute and render, parse -> lex; libc's __libc_start_main and
// __libc_start_call_main under main): the flame graph's context menu
// collapses libc into one frame and collapses fib's recursion, each a
// breadcrumb in the URL's tf=; the call tree and the top table show the
// same transformed profile; a breadcrumb's × removes that transform, a
// click on an earlier one goes back to it; focus on a subtree from the
// call tree's menu roots every view at it.
//
// Usage: node transforms.test.mjs URL SHOTDIR
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const [url, shotDir] = process.argv.slice(2);
if (!url || !shotDir) {
  console.error('usage: node transforms.test.mjs URL SHOTDIR');
  process.exit(2);
}

const hash = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));
// The flame graph's frames: name and parent's name.
const frames = (page) => page.evaluate(() => flame.nodes.map((n, i) =>
  [flame.name(i), flame.parent[i] >= 0 ? flame.name(flame.parent[i]) : '']));
const crumbs = (page) => page.$$eval('#tf-crumbs .chip', (cs) => cs.map((c) => c.dataset.tf));

// Right-clicks the widest flame frame named `name` (whose parent is named
// `parent`, when given) and picks the menu's entry `act`.
async function flameMenu(page, name, parent, act) {
  const at = await page.evaluate(([want, up]) => {
    let best = -1;
    flame.nodes.forEach((n, i) => {
      if (flame.name(i) !== want) return;
      if (up && (flame.parent[i] < 0 || flame.name(flame.parent[i]) !== up)) return;
      if (best < 0 || n[3] > flame.nodes[best][3]) best = i;
    });
    if (best < 0) return null;
    const r = flame.geom(best), b = flame.c.getBoundingClientRect();
    return { x: b.left + r.x + Math.min(r.w / 2, 20), y: b.top + r.y + 9 };
  }, [name, parent]);
  if (!at) throw new Error(`no flame frame ${name} under ${parent}`);
  await page.mouse.click(at.x, at.y, { button: 'right' });
  await page.waitForSelector('#tf-menu:not([hidden])');
  const acts = await page.$$eval('#tf-menu a', (as) => as.map((a) => a.dataset.act));
  await page.click(`#tf-menu a[data-act="${act}"]`);
  return acts;
}

await withBrowser({}, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));

  await page.goto(`${url}#v=flame`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  let f = await frames(page);
  check(f.some(([n]) => n === '__libc_start_call_main'), 'the recording has libc frames', f.map(([n]) => n));
  check(await page.$eval('#tf-bar', (b) => b.hidden), 'no transforms: no breadcrumbs bar');

  // Collapse libc from the flame graph's menu.
  const acts = await flameMenu(page, '__libc_start_call_main', '', 'cl');
  check(['mf', 'mcn', 'f', 'ff', 'cl', 'rec', 'drec', 'df'].every((a) => acts.includes(a)),
    'the flame graph\'s menu offers every transform', acts);
  await page.waitForFunction(() => flame.nodes.some((n, i) => flame.name(i) === 'libc.so.6'));
  f = await frames(page);
  check(hash(page).get('tf') === 'cl:libc.so.6', 'collapse library is tf=cl:libc.so.6', page.url());
  check(!f.some(([n]) => /^__libc_start/.test(n)), 'no libc function is left', f.map(([n]) => n));
  check(f.some(([n, p]) => n === 'main' && p === 'libc.so.6'), 'main hangs below the one libc.so.6 frame', f);

  // Collapse fib's recursion.
  await flameMenu(page, 'fib', 'compute', 'rec');
  await page.waitForFunction(() => !flame.nodes.some((n, i) => flame.name(i) === 'fib' &&
    flame.parent[i] >= 0 && flame.name(flame.parent[i]) === 'fib'));
  check(hash(page).get('tf') === 'cl:libc.so.6;rec:fib', 'the list grows in order', page.url());
  check((await crumbs(page)).join(' ') === 'cl:libc.so.6 rec:fib', 'two breadcrumbs', await crumbs(page));
  await page.screenshot({ path: join(shotDir, 'transforms-flame.png') });

  // The call tree shows the same profile: fib has no fib below it.
  await page.click('#tab-calltree');
  await page.waitForFunction(() => document.querySelector('#ct-table tr[data-path]'));
  const paths = await page.$$eval('#ct-table tr[data-path]', (trs) => trs.map((t) => t.dataset.path));
  check(paths.some((p) => p.startsWith('_start;libc.so.6;main')), 'call tree: _start > libc.so.6 > main', paths);
  check(!paths.some((p) => p.includes('fib;fib')), 'call tree: no fib under fib', paths);
  await page.screenshot({ path: join(shotDir, 'transforms-calltree.png') });
  // The top table too: no libc function.
  await page.click('#tab-top');
  await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length > 0);
  const names = await page.$$eval('#top-table tbody tr', (trs) => trs.map((tr) => tr.cells[tr.cells.length - 1].textContent.trim()));
  check(names.some((n) => n.startsWith('libc.so.6')) && !names.some((n) => n.startsWith('__libc_start')),
    'top: libc.so.6 in place of libc\'s functions', names);

  // × on the first breadcrumb removes it alone.
  await page.click('#tf-crumbs .chip[data-tf="cl:libc.so.6"] a.x');
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('tf') === 'rec:fib');
  check((await crumbs(page)).join(' ') === 'rec:fib', 'one breadcrumb left', await crumbs(page));
  // "complete profile" clears the list.
  await page.click('#tf-crumbs > a');
  await page.waitForFunction(() => document.querySelector('#tf-bar').hidden);
  check(!hash(page).has('tf'), 'complete profile: no tf in the URL', page.url());

  // Focus on a subtree from the call tree's menu: render becomes the root
  // of every view.
  // (The call tree drawn earlier under the collapsed library may still be
  // in the page for a moment: its rows name libc.so.6 and are replaced.)
  await page.goto(`${url}#v=calltree`);
  const fresh = () => {
    const rows = [...document.querySelectorAll('#ct-table tr[data-path]')];
    return !rows.some((r) => r.dataset.path.includes('libc.so.6')) &&
      rows.some((r) => r.dataset.path.endsWith(';main;render'));
  };
  await page.waitForFunction(fresh);
  const render = await page.$$eval('#ct-table tr[data-path]', (trs) => trs.map((t) => t.dataset.path).find((p) => p.endsWith(';main;render')));
  await page.click(`#ct-table tr[data-path="${render}"] td.name`, { button: 'right' });
  await page.waitForSelector('#ct-menu:not([hidden])');
  await page.click('#ct-menu a[data-act="f"]');
  await page.waitForFunction(() => (new URLSearchParams(location.hash.slice(1)).get('tf') || '').startsWith('f:'));
  await page.waitForFunction(() => document.querySelector('#ct-table tr[data-path="render"]'));
  check(hash(page).get('tf') === `f:${render.split(';').join('/')}`, 'focus on subtree: tf=f:PATH', page.url());
  await page.click('#tab-flame');
  await page.waitForFunction(() => flame.nodes.length > 1 && flame.name(1) === 'render');
  f = await frames(page);
  check(f.filter(([, p]) => p === 'all').map(([n]) => n).join(' ') === 'render', 'the flame graph starts at render', f);
  await page.screenshot({ path: join(shotDir, 'transforms-focus.png') });
  check(errors.length === 0, 'no console errors', errors);
});
