// SPDX-License-Identifier: Apache-2.0
// Opens a page saved by kiln serve ("save as one HTML file") from file://
// in headless chromium with every network request refused: the flame graph
// draws, hover gives the known share, a click zooms, search gives the known
// matched share, the top table holds kiln top's numbers and sorts, the call
// graph and the leaf-rooted graph are there, and what the file does not
// hold says so.
//
// Usage: node saved.test.mjs FILE TOP.txt SHOTDIR
//   FILE: the saved page of a serve of this collapsed profile (total 1200):
//     main;run;stage_a;burn_a 600
//     main;run;stage_a;burn_a;burn_b 200
//     main;run;stage_b;burn_b 300
//     main;run;stage_c;burn_c 100
//   TOP.txt: `kiln top -n 0` of the same file.
// Exit status 0 when every check passes, 1 otherwise.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, offline, withBrowser } from './lib.mjs';

const [file, topPath, shotDir] = process.argv.slice(2);
if (!file || !topPath || !shotDir) {
  console.error('usage: node saved.test.mjs FILE TOP.txt SHOTDIR');
  process.exit(2);
}
const ROW = 18;
const url = 'file://' + file;
await withBrowser({ args: ['--allow-file-access-from-files'] }, async (context, page) => {
  // No network: anything but the file itself is refused and recorded.
  const { errors, network } = await offline(context, page);

  async function open(hash) {
    await page.goto('about:blank');
    await page.goto(url + hash);
    await page.waitForSelector('body[data-ready="1"]', { state: 'attached' });
  }
  const text = (sel) => page.locator(sel).evaluate((e) => e.textContent.trim());
  const hashParams = () => page.evaluate(() => Object.fromEntries(new URLSearchParams(location.hash.slice(1))));
  // Where frame `name` at depth d is drawn, from the page's own nodes.
  const spot = async (name, d) => {
    const box = await page.locator('#flame').boundingBox();
    const n = await page.evaluate(([name, d]) => {
      const x = flameData.nodes.find((n) => (n[0] < 0 ? 'all' : flameData.names[n[0]]) === name && n[1] === d);
      return x && { x: x[2], w: x[3], total: flameData.nodes[0][3], depth: flameData.depth };
    }, [name, d]);
    if (!n) throw new Error(`no frame ${name} at depth ${d}`);
    return { x: box.x + (n.x + n.w / 2) * box.width / n.total, y: box.y + (n.depth - d) * ROW + ROW / 2 };
  };

  await open('');
  check(await page.evaluate(() => !!window.KILN_OFFLINE), 'the data are in the page');
  const ink = await page.evaluate(() => {
    const c = document.getElementById('flame');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
    return n / (c.width * c.height);
  });
  check(ink > 0.5, 'flame graph drawn from file://', ink);
  let p = await spot('stage_b', 3);
  await page.mouse.move(p.x, p.y);
  check(await text('#details') === 'Function: stage_b (300 samples, 25.00%)', 'hover on stage_b', await text('#details'));
  await page.screenshot({ path: join(shotDir, 'saved-flame.png') });
  await page.mouse.click(p.x, p.y);
  await page.waitForFunction(() => document.querySelectorAll('#crumbs a').length === 4);
  check((await hashParams()).root === 'main;run;stage_b', 'a click zooms', await hashParams());
  p = await spot('burn_b', 1);
  await page.mouse.move(p.x, p.y);
  check(await text('#details') === 'Function: burn_b (300 samples, 25.00%)', 'zoomed: burn_b under stage_b', await text('#details'));
  await open('#s=burn_b');
  await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
  check(await text('#matched') === 'Matched: 41.67%', 'search burn_b: 41.67% (500 of 1200)', await text('#matched'));
  // The server's dialect (POSIX ERE) in the saved page too: a POSIX class.
  await open('#s=' + encodeURIComponent('^stage_[[:alpha:]]$'));
  await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
  check(await text('#matched') === 'Matched: 100.00%', 'search ^stage_[[:alpha:]]$ (POSIX class): 100%', await text('#matched'));
  await open('#root=main;run;stage_a&s=burn_b');
  await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
  check(await text('#matched') === 'Matched: 41.67% (25.00% of the zoom)', 'search within the zoom', await text('#matched'));

  // The top table: kiln top's numbers, sorted by cum on a click.
  await open('#v=top');
  await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length > 0);
  const rows = await page.locator('#top-table tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.children].filter((td) => getComputedStyle(td).display !== 'none')
      .map((td) => td.textContent.trim()).join(' ')));
  const want = [];
  let go = false;
  for (const line of readFileSync(topPath, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (go && f.length >= 6) want.push(f.slice(0, 6).join(' '));
    if (f[0] === 'flat') go = true;
  }
  check(JSON.stringify(rows) === JSON.stringify(want), 'top table equals kiln top', { rows, want });
  await page.locator('#top-table th[data-sort="cum"]').click();
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('sort') === 'cum');
  await page.waitForFunction(() => document.querySelector('#top-table tbody td.name').textContent === 'main')
    .catch(() => {});
  check(await page.locator('#top-table tbody td.name').first().textContent() === 'main', 'sorted by cum: main first');
  await page.locator('#top-filter').fill('^burn');
  await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length === 3);
  check(JSON.stringify(await page.locator('#top-table tbody td.name').allTextContents()) ===
    JSON.stringify(['burn_a', 'burn_b', 'burn_c']), 'filtered');

  // The call graph, embedded.
  await open('#v=callgraph');
  await page.waitForSelector('#cg svg a[data-fn]', { state: 'attached' });
  check(await page.locator('#cg svg a[data-fn]').count() === 8, 'call graph: 8 functions', await page.locator('#cg svg a[data-fn]').count());

  // What the file does not hold: hidden, or said.
  check(await page.locator('#downloads').isHidden() && await page.locator('#timeline-view').isHidden(),
    'no downloads and no timeline in a saved page');
  // The leaf-rooted flame graph is held (savedall.test.mjs checks the rest).
  await open('#rev=1');
  p = await spot('burn_b', 1);
  await page.mouse.move(p.x, p.y);
  check(await text('#details') === 'Function: burn_b (500 samples, 41.67%)', 'leaf-rooted: burn_b as a root', await text('#details'));
  await open('#v=sandwich&fn=nosuch');
  await page.waitForFunction(() => !document.getElementById('error').hidden);
  check(/not in this saved page: the sandwich of 'nosuch'/.test(await text('#error')), 'a sandwich it lacks: says it is not in the file', await text('#error'));

  check(network.length === 0, 'no network requests', network);
  check(errors.length === 0, 'no console errors', errors);
});
