// SPDX-License-Identifier: Apache-2.0
// Opens a page saved by kiln serve from file:// in headless chromium with
// every network request refused, and checks that it holds every view and
// sample type of its selection: the type switcher, the top table (kiln
// top's numbers in both types, the live page's deltas against the --diff
// base), the call tree top-down and inverted, a sandwich, the source with
// its text, and the summary; and that a page whose sources could not be
// read says so, and a page saved with a time range holds to it.
//
// Usage: node savedall.test.mjs ALL.html NOSRC.html TOPCPU.txt TOPSAMPLES.txt LIVEDIFF.json RANGE.html RANGETOTAL SHOTDIR
//   ALL.html: the saved page of this pprof profile (t985), served from the
//     folder that holds main.c, work.c, hot.c and idle.c, with --diff:
//       main;work;hot   30 samples, 300ms cpu  (hot.c:3 "spin(i);")
//       main;work       10 samples, 100ms cpu
//       main;idle       60 samples,  50ms cpu
//   NOSRC.html: the saved page of a profile whose files do not exist.
//   TOPCPU.txt, TOPSAMPLES.txt: `kiln top -n 0` of ALL's profile (the
//     default type, cpu, and --sample-type samples).
//   LIVEDIFF.json: the live /api/top?diff=1&n=0 of ALL's profile.
//   RANGE.html: the saved page of a profile with times, 0.1 s to 0.3 s;
//   RANGETOTAL: the live summary's total of that range.
// Exit status 0 when every check passes, 1 otherwise.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, offline, withBrowser } from './lib.mjs';

const [all, nosrc, topCpu, topSamples, liveDiff, range, rangeTotal, shotDir] = process.argv.slice(2);
if (!shotDir) {
  console.error('usage: node savedall.test.mjs ALL.html NOSRC.html TOPCPU.txt TOPSAMPLES.txt LIVEDIFF.json RANGE.html RANGETOTAL SHOTDIR');
  process.exit(2);
}

// kiln top's rows as the page's visible cells read: "flat flat% sum% cum cum% name".
function kilnTop(path) {
  const want = [];
  let go = false;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (go && f.length >= 6) want.push(f.slice(0, 6).join(' '));
    if (f[0] === 'flat') go = true;
  }
  return want;
}

await withBrowser({ args: ['--allow-file-access-from-files'] }, async (context, page) => {
  // No network: anything but the file itself is refused and recorded.
  const { errors, network } = await offline(context, page);
  const text = (sel) => page.locator(sel).evaluate((e) => e.textContent.trim());
  async function open(file, hash) {
    await page.goto('about:blank');
    await page.goto('file://' + file + hash);
    await page.waitForSelector('body[data-ready="1"]', { state: 'attached' });
    check(await page.locator('#error').isHidden(), `${hash || 'the page'}: no error`, await text('#error'));
  }
  const shot = (name) => page.screenshot({ path: join(shotDir, name), fullPage: true });
  const topRows = async () => {
    await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length > 0);
    return page.locator('#top-table tbody tr').evaluateAll((trs) =>
      trs.map((tr) => [...tr.children].filter((td) => getComputedStyle(td).display !== 'none')
        .map((td) => td.textContent.trim()).join(' ')));
  };

  // ---- the type switcher and the top table: kiln top's numbers ----
  await open(all, '#v=top');
  const types = await page.locator('#type option').evaluateAll((os) => os.map((o) => o.value));
  check(JSON.stringify(types) === '["samples","cpu"]', 'both sample types offered', types);
  check(await page.locator('#type').inputValue() === 'cpu', 'the saved type (the default, cpu) first');
  let rows = await topRows();
  check(JSON.stringify(rows) === JSON.stringify(kilnTop(topCpu)), 'top (cpu) equals kiln top', { rows, want: kilnTop(topCpu) });
  await page.locator('#type').selectOption('samples');
  await page.waitForFunction(() => /total 100$/.test(document.getElementById('top-summary').textContent));
  rows = await topRows();
  check(JSON.stringify(rows) === JSON.stringify(kilnTop(topSamples)), 'switched to samples: top equals kiln top --sample-type samples',
    { rows, want: kilnTop(topSamples) });
  await shot('savedall-top.png');

  // ---- the flame graph and icicle in either type ----
  await open(all, '#type=samples');
  check(await page.evaluate(() => flameData.nodes[0][3]) === 100, 'flame graph (samples): total 100', await page.evaluate(() => flameData.total));
  await open(all, '#v=icicle');
  check(await page.evaluate(() => flameData.nodes[0][3]) === 450000000, 'icicle (cpu): total 450ms', await page.evaluate(() => flameData.total));
  await shot('savedall-icicle.png');

  // ---- top with deltas: the live page's ----
  await open(all, '#v=top&d=1');
  await page.waitForFunction(() => document.querySelector('#top-table.diff tbody tr'));
  const live = JSON.parse(readFileSync(liveDiff, 'utf8'));
  const deltas = await page.locator('#top-table tbody tr').evaluateAll((trs) => Object.fromEntries(trs.map((tr) =>
    [tr.querySelector('td.name').textContent, [...tr.querySelectorAll('td')].slice(5, 9).map((td) => td.textContent)])));
  const want = Object.fromEntries(live.rows.map((r) => [r.name, [r.base_flat_str, (r.delta > 0 ? '+' : '') + r.delta_str, r.delta_pct, r.delta_cum_pct]]));
  check(JSON.stringify(deltas) === JSON.stringify(want), 'top with deltas equals the live page\'s', { deltas, want });
  await shot('savedall-diff.png');

  // ---- the call tree: top-down and inverted ----
  const ctRow = (path) => page.locator(`#ct-table tr[data-path="${path}"]`).evaluate((tr) =>
    [...tr.children].map((td) => td.textContent.trim()).join('|'));
  await open(all, '#v=calltree');
  await page.waitForSelector('#ct-table tr[data-path="main;work;hot"]', { state: 'attached' });
  check(await ctRow('main;work;hot') === '300ms|66.67%|300ms|66.67%||hot', 'call tree (cpu): hot 300ms, 66.67%', await ctRow('main;work;hot'));
  check(await ctRow('main;work') === '400ms|88.89%|100ms|22.22%|1|▾work', 'call tree (cpu): work 400ms, self 100ms', await ctRow('main;work'));
  await page.locator('#type').selectOption('samples');
  await page.waitForFunction(() => /total 100 samples/.test(document.getElementById('ct-summary').textContent));
  await page.waitForSelector('#ct-table tr[data-path="main;idle"]', { state: 'attached' });
  check(await ctRow('main;idle') === '60 samples|60.00%|60 samples|60.00%||idle', 'call tree (samples): idle 60, 60%', await ctRow('main;idle'));
  await shot('savedall-calltree.png');
  await page.locator('#ct-reverse').check();
  await page.waitForFunction(() => /inverted/.test(document.getElementById('ct-summary').textContent));
  const roots = await page.locator('#ct-table tbody tr[data-path]').evaluateAll((trs) =>
    trs.filter((tr) => !tr.dataset.path.includes(';')).map((tr) => tr.children[0].textContent + ' ' + tr.children[5].textContent.trim()));
  check(JSON.stringify(roots) === JSON.stringify(['60 samples ▸idle', '30 samples ▸hot', '10 samples ▸work']) ||
    JSON.stringify(roots) === JSON.stringify(['60 samples ▾idle', '30 samples ▸hot', '10 samples ▸work']),
  'inverted call tree (samples): the leaves idle 60, hot 30, work 10', roots);
  await shot('savedall-calltree-inverted.png');

  // ---- a sandwich, in both types ----
  await open(all, '#v=sandwich&fn=hot');
  await page.waitForFunction(() => /cum/.test(document.getElementById('sw-summary').textContent));
  check(await text('#sw-summary') === 'hot: cum 300ms (66.67%), self 300ms (66.67%)', 'sandwich of hot (cpu)', await text('#sw-summary'));
  const callers = await page.evaluate(() => callers.nodes.map((n) => callers.names[n[0]]));
  check(JSON.stringify(callers) === '["hot","work","main"]', 'its callers: work, main', callers);
  await open(all, '#v=sandwich&fn=work&type=samples');
  await page.waitForFunction(() => /cum/.test(document.getElementById('sw-summary').textContent));
  check(await text('#sw-summary') === 'work: cum 40 samples (40.00%), self 10 samples (10.00%)', 'sandwich of work (samples)', await text('#sw-summary'));
  await shot('savedall-sandwich.png');

  // ---- the source, with its text ----
  await page.locator('#sw-source').click();
  await page.waitForFunction(() => /flat/.test(document.getElementById('src-summary').textContent));
  check(await text('#src-summary') === 'work: flat 10 (10.00%), cum 40 (40.00%)', 'source of work (samples), from the sandwich', await text('#src-summary'));
  await open(all, '#v=source&fn=hot');
  await page.waitForFunction(() => /flat/.test(document.getElementById('src-summary').textContent));
  const line3 = await page.locator('#src table.src tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.children].map((td) => td.textContent).join('|')).find((r) => r.startsWith('3|')));
  check(line3 === '3|300ms|300ms|\tspin(i);', 'source of hot (cpu): line 3 with its cost and text', line3);
  check(await page.locator('#src-none').count() === 0, 'no "unreadable sources" note where they were read');
  await shot('savedall-source.png');

  // ---- the summary ----
  await open(all, '#v=summary');
  await page.waitForSelector('#sum-sel-total', { state: 'attached' });
  check(await text('#sum-sel-total') === '450ms', 'summary (cpu): the selection totals 450ms', await text('#sum-sel-total'));
  await page.locator('#type').selectOption('samples');
  await page.waitForFunction(() => document.getElementById('sum-sel-total').textContent === '100');
  check(await text('#sum-samples') !== '', 'summary (samples): the selection totals 100');
  await shot('savedall-summary.png');

  // ---- the help names what the page has: no transforms ----
  check(!/merge|transforms/.test(await text('#calltree-view .help')), 'call tree help: no transforms', await text('#calltree-view .help'));

  // ---- a profile whose sources cannot be read ----
  await open(nosrc, '#v=source&fn=work');
  await page.waitForFunction(() => /flat/.test(document.getElementById('src-summary').textContent));
  check(await page.locator('#src-none').isVisible(), 'unreadable sources: the page says so');
  check(/no source text: not found on this machine/.test(await text('#src h3')), 'unreadable sources: the file says why', await text('#src h3'));
  check(await text('#src-summary') === 'work: flat 70ns (70.00%), cum 70ns (70.00%)', 'unreadable sources: the costs are there', await text('#src-summary'));
  await shot('savedall-nosrc.png');

  // ---- a time range: the summary's total and filters are the range's ----
  await open(range, '#v=summary');
  await page.waitForSelector('#sum-sel-total', { state: 'attached' });
  check(await text('#sum-sel-total') === rangeTotal, `time range: the selection totals ${rangeTotal}`, await text('#sum-sel-total'));
  check(/0\.100 s – 0\.300 s/.test(await text('#saved')), 'time range: the page says which', await text('#saved'));
  await shot('savedall-range.png');

  check(network.length === 0, 'no network requests', network);
  check(errors.length === 0, 'no console errors', errors);
});
