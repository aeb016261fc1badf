// SPDX-License-Identifier: Apache-2.0
// Drives kiln serve's page in headless chromium (Debian's /usr/bin/chromium
// through playwright-core) as a user would: the flame graph draws, hover
// shows a frame's share, click zooms (and the URL says so), search gives the
// matched share, the sandwich lists callers, the top table shows kiln top's
// numbers, sorting and filtering work, a link reproduces the view.
//
// Usage: node serve.test.mjs URL TOP.txt SHOTDIR
//   URL: a kiln serve of this collapsed profile (total 1200):
//     main;run;stage_a;burn_a 600
//     main;run;stage_a;burn_a;burn_b 200
//     main;run;stage_b;burn_b 300
//     main;run;stage_c;burn_c 100
//   TOP.txt: `kiln top -n 0` of the same file.  SHOTDIR: screenshots go there.
// Usage: node serve.test.mjs --recorded URL SHOTDIR
//   URL: a kiln serve of a profile of tests/workloads/shares (60/30/10).
// Usage: node serve.test.mjs --diff URL SHOTDIR
//   URL: kiln serve NEW --diff BASE where BASE has burn_a 600, burn_b 300,
//   burn_c 100 and NEW burn_a 300, burn_b 600, burn_c 100 (same chains).
// Exit status 0 when every check passes, 1 otherwise.
import { chromium } from 'playwright-core';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const recorded = args[0] === '--recorded';
const diffMode = args[0] === '--diff';
if (recorded || diffMode) args.shift();
const [url, topPath, shotArg] = args;
const shotDir = recorded || diffMode ? topPath : shotArg;
if (!url || !shotDir) {
  console.error('usage: node serve.test.mjs URL TOP.txt SHOTDIR | --recorded URL SHOTDIR');
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

const ROW = 18;
const userDataDir = mkdtempSync(join(tmpdir(), 'kiln-chromium-'));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.KILN_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu',
      '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run'],
    viewport: { width: 1300, height: 600 },
    timeout: 60000,
  });
  context.setDefaultTimeout(30000);
  const page = context.pages()[0] || await context.newPage();
  const errors = [];
  const foreign = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('request', (r) => { if (!r.url().startsWith(url) && r.url() !== 'about:blank') foreign.push(r.url()); });

  // Loads a view and waits until the page drew it (no sleeps: the page
  // marks itself ready, and each later change is awaited on its effect).
  async function open(hash) {
    await page.goto('about:blank');    // a fresh load, not a hash change
    await page.goto(url + hash);
    await page.waitForSelector('body[data-ready="1"]', { state: 'attached' });
  }
  const text = (sel) => page.locator(sel).evaluate((e) => e.textContent.trim());
  const hashParams = () => page.evaluate(() => Object.fromEntries(new URLSearchParams(location.hash.slice(1))));

  // Pixels of a canvas that are not background (drawn frames).
  async function inked(id) {
    return page.evaluate((id) => {
      const c = document.getElementById(id);
      if (!c.width || !c.height) return 0;
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n / (c.width * c.height);
    }, id);
  }

  // Where a frame of the flame graph is: asks the API what the page asked
  // (same width, root, orientation) and maps the node to the canvas.
  async function spot(canvasId, api, name, depth, up) {
    const box = await page.locator('#' + canvasId).boundingBox();
    const d = await (await fetch(`${url}api/${api}${api.includes('?') ? '&' : '?'}width=${Math.round(box.width)}`)).json();
    const tree = d.nodes ? d : d.callers;
    const all = d.nodes ? d : (canvasId === 'sw-callers' ? d.callers : d.callees);
    const n = all.nodes.find((n) => (n[0] < 0 ? 'all' : d.names[n[0]]) === name && (depth === undefined || n[1] === depth));
    if (!n) throw new Error(`no frame ${name} in /api/${api}`);
    const s = box.width / all.nodes[0][3];
    const y = up ? (all.depth - n[1]) * ROW : n[1] * ROW;
    void tree;
    return { x: box.x + (n[2] + n[3] / 2) * s, y: box.y + y + ROW / 2,
      right: box.x + (n[2] + n[3]) * s - 3 };
  }

  // The colour drawn at a page position of a canvas.
  async function pixel(id, x, y) {
    return page.evaluate(([id, x, y]) => {
      const c = document.getElementById(id), b = c.getBoundingClientRect();
      const k = c.width / b.width;
      return [...c.getContext('2d').getImageData(Math.round((x - b.left) * k), Math.round((y - b.top) * k), 1, 1).data];
    }, [id, x, y]);
  }

  if (diffMode) {
    await open('#d=1');
    check(await inked('flame') > 0.5, 'diff: flame graph drawn');
    check(await page.locator('#diff').isChecked(), 'diff: the checkbox is on');
    check(await text('#diff-base') === 'base.collapsed', 'diff: names the base', await text('#diff-base'));
    let p = await spot('flame', 'flame?diff=1', 'burn_b', 4, true);
    await page.mouse.move(p.x, p.y);
    check(await text('#details') === 'Function: burn_b (600 samples, 60.00%), grew +300 samples (+100.00%)',
      'diff: burn_b grew', await text('#details'));
    let px = await pixel('flame', p.x, p.y);
    check(px[0] === 255 && px[1] < 150 && px[2] < 150, 'diff: burn_b drawn red', px);
    p = await spot('flame', 'flame?diff=1', 'burn_a', 4, true);
    await page.mouse.move(p.x, p.y);
    check(await text('#details') === 'Function: burn_a (300 samples, 30.00%), shrank -300 samples (-50.00%)',
      'diff: burn_a shrank', await text('#details'));
    px = await pixel('flame', p.x, p.y);
    check(px[2] === 255 && px[0] < 200 && px[1] < 200, 'diff: burn_a drawn blue', px);
    p = await spot('flame', 'flame?diff=1', 'burn_c', 4, true);
    await page.mouse.move(p.x, p.y);
    check(await text('#details') === 'Function: burn_c (100 samples, 10.00%), unchanged',
      'diff: burn_c unchanged', await text('#details'));
    await page.screenshot({ path: join(shotDir, 'diff.png') });
    // Off: the ordinary colours, the details without a change.
    await page.locator('#diff').uncheck();
    await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('d') === null);
    // (The graph without the base comes after the URL changes: hovered
    // again until it is drawn, up to a minute.)
    for (let i = 0; i < 600; i++) {
      await page.mouse.move(p.x, p.y + 1);
      await page.mouse.move(p.x, p.y);
      if (!(await text('#details')).endsWith('unchanged')) break;
      await page.waitForTimeout(100);
    }
    check(await text('#details') === 'Function: burn_c (100 samples, 10.00%)', 'diff off', await text('#details'));

    // The top table with deltas, sorted by the change: burn_b grew by
    // 300 (+100%), burn_a shrank by 300 (-50%), in red and blue.
    await open('#v=top&d=1&sort=delta');
    await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length > 0);
    check(await page.locator('#top-table').evaluate((t) => t.classList.contains('diff')), 'diff: delta columns shown');
    const cells = (i) => page.locator('#top-table tbody tr').nth(i).locator('td').allTextContents();
    const first = await cells(0);
    check(JSON.stringify(first.slice(5)) === JSON.stringify(['300', '+300', '+100.00%', '+100.00%', 'burn_b']),
      'diff: burn_b first, grown by 300 (+100%)', first);
    const last = await cells(await page.locator('#top-table tbody tr').count() - 1);
    check(JSON.stringify(last.slice(5)) === JSON.stringify(['600', '-300', '-50.00%', '-50.00%', 'burn_a']),
      'diff: burn_a last, shrunk by 300 (-50%)', last);
    const colour = await page.locator('#top-table tbody tr').first().locator('td').nth(6)
      .evaluate((td) => getComputedStyle(td).color);
    check(colour === 'rgb(204, 0, 0)', 'diff: growth in red', colour);
    await page.screenshot({ path: join(shotDir, 'top-diff.png') });
    await page.locator('#top-diff').uncheck();
    await page.waitForFunction(() => !document.getElementById('top-table').classList.contains('diff'));
    check((await hashParams()).d === undefined, 'diff off in the top table');

    // The call graph against the base.
    await open('#v=callgraph&d=1');
    await page.waitForSelector('#cg svg a[data-fn="burn_b"]', { state: 'attached' });
    check(/Diff: colour by change/.test(await page.locator('#cg svg').textContent()), 'diff: call graph against the base');
  } else if (recorded) {
    await open('#');
    check(await inked('flame') > 0.02, 'recorded profile: flame graph drawn');
    // One palette: each frame drawn in the colour kiln flame's SVG gives
    // it (KILN_FLAME_FILLS: "name=rgb(r,g,b)" lines from that SVG), read
    // near the frame's right end (its label is at the left).
    for (const line of (process.env.KILN_FLAME_FILLS || '').split('\n').filter(Boolean)) {
      const [, name, r, g, b] = /^(.*)=rgb\((\d+),(\d+),(\d+)\)$/.exec(line);
      const f = await spot('flame', 'flame', name, undefined, true);
      const px = await pixel('flame', f.right, f.y);
      check(px[0] === +r && px[1] === +g && px[2] === +b,
        `recorded profile: ${name} drawn in kiln flame's colour rgb(${r},${g},${b})`, px);
    }
    await page.locator('#search').fill('^burn_a$');
    await page.locator('#search').press('Enter');
    await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
    const m = /Matched: ([\d.]+)%/.exec(await text('#matched'));
    check(m && Math.abs(+m[1] - 60) <= 8, 'recorded profile: burn_a matched about 60%', m && m[1]);
    const p = await spot('flame', 'flame', 'burn_a', undefined, true);
    await page.mouse.move(p.x, p.y);
    const det = await text('#details');
    const hm = /^Function: burn_a \(.*, ([\d.]+)%\)$/.exec(det);
    check(hm && Math.abs(+hm[1] - 60) <= 8, 'recorded profile: hover on burn_a shows about 60%', det);
    const tip = await text('#tip');
    check(/module |at .*shares\.c:\d+/.test(tip), 'recorded profile: hover shows module or file:line', tip);
    await page.screenshot({ path: join(shotDir, 'recorded-flame.png') });
    await open('#v=sandwich&fn=burn_a');
    await page.waitForFunction(() => /cum/.test(document.getElementById('sw-summary').textContent));
    const q = await spot('sw-callers', 'sandwich?fn=burn_a', 'stage_a', 1, true);
    await page.mouse.move(q.x, q.y);
    check(/^Function: stage_a /.test(await text('#sw-details')), 'recorded profile: stage_a calls burn_a',
      await text('#sw-details'));
    await page.screenshot({ path: join(shotDir, 'recorded-sandwich.png') });
    // The sandwich's source link: burn_a's lines of shares.c, its loop
    // the most shaded.
    await page.locator('#sw-source').click();
    await page.waitForSelector('#src table.src tbody tr', { state: 'attached' });
    check((await hashParams()).v === 'source', 'recorded profile: source view from the sandwich');
    check(/tests\/workloads\/shares\.c/.test(await text('#src h3')), 'recorded profile: source names shares.c', await text('#src h3'));
    const srcRows = await page.locator('#src table.src tbody tr').evaluateAll((trs) => trs.map((tr) =>
      [tr.children[1].textContent, tr.children[3].textContent, getComputedStyle(tr).backgroundColor]));
    const costly = srcRows.filter((r) => r[0]);
    check(costly.length > 0 && costly.some((r) => /x = x \*|for \(/.test(r[1])), 'recorded profile: the loop has cost', costly);
    check(costly.every((r) => r[2] !== 'rgba(0, 0, 0, 0)'), 'recorded profile: lines with cost shaded', costly);
    check(srcRows.some((r) => /void burn_a/.test(r[1])), 'recorded profile: the function\'s own line shown', srcRows.length);
    await page.screenshot({ path: join(shotDir, 'recorded-source.png') });
  } else {
    // ---- flame graph ----
    await open('#');
    check(await inked('flame') > 0.5, 'flame graph canvas inked', await inked('flame'));
    let p = await spot('flame', 'flame', 'stage_b', 3, true);
    await page.mouse.move(p.x, p.y);
    check(await text('#details') === 'Function: stage_b (300 samples, 25.00%)', 'hover on stage_b',
      await text('#details'));
    check(await page.locator('#tip').isVisible(), 'tooltip shown');
    check((await text('#tip')).startsWith('stage_b (300 samples, 25.00%)'), 'tooltip text', await text('#tip'));
    await page.screenshot({ path: join(shotDir, 'flame.png') });

    // Click to zoom: the URL names the root, the breadcrumbs show the path,
    // stage_b then spans the width and stage_a is gone.
    await page.mouse.click(p.x, p.y);
    await page.waitForFunction(() => document.querySelectorAll('#crumbs a').length === 4);
    check((await hashParams()).root === 'main;run;stage_b', 'zoom puts the root in the URL', await hashParams());
    check(JSON.stringify(await page.locator('#crumbs a').allTextContents()) ===
      JSON.stringify(['all', 'main', 'run', 'stage_b']), 'breadcrumbs');
    const box = await page.locator('#flame').boundingBox();
    for (const x of [box.x + 5, box.x + box.width / 2, box.x + box.width - 5]) {
      await page.mouse.move(x, box.y + box.height - ROW / 2);
      check(await text('#details') === 'Function: stage_b (300 samples, 25.00%)',
        `zoomed stage_b spans the width (x=${Math.round(x - box.x)})`, await text('#details'));
      await page.mouse.move(x, box.y + box.height - ROW * 1.5);
      check(await text('#details') === 'Function: burn_b (300 samples, 25.00%)',
        `its child burn_b too (x=${Math.round(x - box.x)})`, await text('#details'));
    }
    check(box.height <= 2 * ROW + 2, 'only stage_b and burn_b rows remain', box.height);
    await page.screenshot({ path: join(shotDir, 'flame-zoomed.png') });
    // Breadcrumb back to run; then Backspace zooms out; Back in history too.
    await page.locator('#crumbs a', { hasText: 'run' }).click();
    await page.waitForFunction(() => document.querySelectorAll('#crumbs a').length === 3);
    check((await hashParams()).root === 'main;run', 'breadcrumb zooms out to run');
    await page.locator('#flame').focus();
    await page.keyboard.press('Backspace');
    await page.waitForFunction(() => document.querySelectorAll('#crumbs a').length === 2);
    check((await hashParams()).root === 'main', 'Backspace zooms out one level');
    await page.goBack();
    await page.waitForFunction(() => document.querySelectorAll('#crumbs a').length === 3);
    check((await hashParams()).root === 'main;run', 'browser Back restores the previous zoom');

    // Keyboard: from nothing selected, ArrowUp selects main's child... the
    // root's first child, Enter zooms into it.
    await open('#');
    await page.locator('#flame').focus();
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('#crumbs a').length === 2);
    check((await hashParams()).root === 'main', 'arrow + Enter zooms into main');

    // Search: nested matches count once (800 + 300 of 1200).
    await open('#');
    await page.keyboard.press('/');
    check(await page.evaluate(() => document.activeElement.id) === 'search', '/ focuses the search');
    await page.keyboard.type('burn_[ab]');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
    check(await text('#matched') === 'Matched: 91.67%', 'search burn_[ab] matches 91.67%', await text('#matched'));
    check((await hashParams()).s === 'burn_[ab]', 'search in the URL');
    await page.screenshot({ path: join(shotDir, 'flame-search.png') });
    // The link reproduces the view: zoom + search in a fresh page.
    const link = url + '#root=main%3Brun%3Bstage_a&s=%5Eburn_b%24';
    await open(link.slice(url.length));
    check(await text('#matched') === 'Matched: 41.67% (25.00% of the zoom)', 'a link reproduces zoom and search',
      await text('#matched'));
    check(await page.locator('#search').inputValue() === '^burn_b$', 'search box filled from the link');

    // Icicle: root on top.
    await open('#v=icicle');
    check(await inked('flame') > 0.5, 'icicle canvas inked');
    p = await spot('flame', 'flame', 'burn_c', 4, false);
    await page.mouse.move(p.x, p.y);
    check(await text('#details') === 'Function: burn_c (100 samples, 8.33%)', 'icicle hover on burn_c',
      await text('#details'));
    await page.screenshot({ path: join(shotDir, 'icicle.png') });

    // Focus control: only stacks through stage_c; percentages stay of the
    // selection (as kiln top --focus prints them).
    await open('#');
    await page.locator('#focus').fill('stage_c');
    await page.locator('#focus').press('Enter');
    await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('focus') === 'stage_c');
    await page.waitForFunction(() => document.getElementById('flame').style.height === `${5 * 18 + 1}px`);
    p = await spot('flame', 'flame?focus=stage_c', 'burn_c', 4, true);
    await page.mouse.move(p.x, p.y);
    check(await text('#details') === 'Function: burn_c (100 samples, 100.00%)', 'focus=stage_c', await text('#details'));
    // The download links save the selection.
    const href = await page.locator('#downloads a[data-format="collapsed"]').getAttribute('href');
    check(/^\/api\/download\?/.test(href) && /focus=stage_c/.test(href) && /format=collapsed/.test(href),
      'download link carries the selection', href);
    const dl = await page.evaluate(async (h) => (await fetch(h)).text(), href);
    check(dl.trim() === 'main;run;stage_c;burn_c 100', 'collapsed download of the selection', dl);

    // ---- sandwich ----
    await open('#v=sandwich&fn=burn_b');
    await page.waitForFunction(() => /cum/.test(document.getElementById('sw-summary').textContent));
    check(await text('#sw-summary') === 'burn_b: cum 500 samples (41.67%), self 500 samples (41.67%)',
      'sandwich summary', await text('#sw-summary'));
    check(await inked('sw-callers') > 0.3, 'callers canvas inked');
    check(await inked('sw-callees') > 0.3, 'callees canvas inked');
    const callersSeen = [];
    for (const name of ['burn_a', 'stage_b']) {
      p = await spot('sw-callers', 'sandwich?fn=burn_b', name, 1, true);
      await page.mouse.move(p.x, p.y);
      callersSeen.push(await text('#sw-details'));
    }
    check(JSON.stringify(callersSeen) === JSON.stringify(['Function: burn_a (200 samples, 16.67%)',
      'Function: stage_b (300 samples, 25.00%)']), 'sandwich lists burn_b\'s callers', callersSeen);
    await page.screenshot({ path: join(shotDir, 'sandwich.png') });
    // Clicking a caller makes it the function.
    await page.mouse.click(p.x, p.y);
    await page.waitForFunction(() => /^stage_b:/.test(document.getElementById('sw-summary').textContent));
    check((await hashParams()).fn === 'stage_b', 'click on a caller moves the sandwich to it');

    // ---- top table ----
    await open('#v=top');
    await page.waitForSelector('#top-table tbody tr');
    const rows = await page.locator('#top-table tbody tr').evaluateAll((trs) =>
      trs.map((tr) => [...tr.children].map((td) => td.textContent).join(' ')));
    let want = [];
    let go = false;
    for (const line of readFileSync(topPath, 'utf8').split('\n')) {
      const f = line.trim().split(/\s+/);
      if (go && f.length >= 6) want.push(f.slice(0, 6).join(' '));
      if (f[0] === 'flat') go = true;
    }
    check(JSON.stringify(rows) === JSON.stringify(want), 'top table equals kiln top', { rows, want });
    await page.screenshot({ path: join(shotDir, 'top.png') });
    await page.locator('#top-table th[data-sort="cum"]').click();
    await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('sort') === 'cum');
    await page.waitForFunction(() => document.querySelector('#top-table tbody td.name').textContent === 'main');
    check(await page.locator('#top-table th[data-sort="cum"]').evaluate((t) => t.classList.contains('sorted')),
      'sorted by cum');
    await page.locator('#top-filter').fill('^burn');
    await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length === 3);
    const names = await page.locator('#top-table tbody td.name').allTextContents();
    check(JSON.stringify(names) === JSON.stringify(['burn_a', 'burn_b', 'burn_c']), 'filter ^burn by cum', names);
    check((await hashParams()).filter === '^burn', 'filter in the URL');
    // A name in the table opens its sandwich.
    await page.locator('#top-table td.name a', { hasText: 'burn_c' }).click();
    await page.waitForFunction(() => /^burn_c:/.test(document.getElementById('sw-summary').textContent));
    check((await hashParams()).v === 'sandwich', 'top row opens the sandwich');

    // The call graph tab: graphviz's SVG inline, every function a link to
    // its sandwich, the same nodes as kiln callgraph.
    await open('#v=callgraph');
    await page.waitForSelector('#cg svg a[data-fn]', { state: 'attached' });
    const fns = (await page.locator('#cg svg a[data-fn]').evaluateAll((as) => as.map((a) => a.dataset.fn))).sort();
    check(JSON.stringify(fns) === JSON.stringify(['burn_a', 'burn_b', 'burn_c', 'main', 'run', 'stage_a', 'stage_b', 'stage_c']),
      'call graph: every function', fns);
    const cgBox = await page.locator('#cg svg').boundingBox();
    check(cgBox.width > 200 && cgBox.height > 200, 'call graph drawn', cgBox);
    check(/burn_a \(total 800, self 600\)/.test(await page.locator('#cg svg g.node title').allTextContents().then((t) => t.join('|'))),
      'call graph: hover text names the share of burn_a');
    await page.screenshot({ path: join(shotDir, 'callgraph.png') });
    await page.locator('#cg svg a[data-fn="stage_b"]').click();
    await page.click('#cg-menu button[data-act="sandwich"]');
    await page.waitForFunction(() => /^stage_b:/.test(document.getElementById('sw-summary').textContent));
    check((await hashParams()).v === 'sandwich' && (await hashParams()).fn === 'stage_b', 'call graph: a click\'s menu opens the sandwich');
    await open('#v=callgraph&cgn=3');
    await page.waitForSelector('#cg svg a[data-fn]', { state: 'attached' });
    check(await page.locator('#cg svg a[data-fn]').count() <= 3, 'call graph: nodes=3 prunes');

    // A bad regex is reported on the page, not thrown.
    await open('#focus=%28');
    await page.waitForFunction(() => !document.getElementById('error').hidden);
    check(/bad focus regular expression/.test(await text('#error')), 'bad focus shown', await text('#error'));
  }
  const real = errors.filter((e) => !/status of 400/.test(e));
  check(real.length === 0, 'no script or console errors', real);
  check(foreign.length === 0, 'no requests outside the server', foreign);
} catch (e) {
  failures++;
  console.log(`not ok - ${e.stack || e}`);
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
