// SPDX-License-Identifier: Apache-2.0
// Drives the threads-over-time strip of kiln serve's page in headless
// chromium: the strips draw where each thread had samples, a drag selects
// a time range that the URL keeps and every view follows, a link with a
// range reproduces it, a double-click returns to the whole run, and an
// input without times has no strip.
//
// Usage: node timeline.test.mjs URL SHOTDIR
//   URL: kiln serve of two inputs: 0, perf script text of thread alpha
//   (tid 101) in phase_one for 0-600 ms and thread beta (tid 102) in
//   phase_two for 400-1000 ms, one sample per millisecond each; 1, a
//   collapsed profile (no times).
// Usage: node timeline.test.mjs --heap URL SHOTDIR R1 R2
//   URL: kiln serve of a heap trace of tests/workloads/heapphases; R1 and
//   R2 (ns) are in the pauses before phase_two and before phase_three.
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const args = process.argv.slice(2);
const heapMode = args[0] === '--heap';
if (heapMode) args.shift();
const [url, shotDir, R1, R2] = args;
if (!url || !shotDir || (heapMode && !R2)) {
  console.error('usage: node timeline.test.mjs URL SHOTDIR');
  process.exit(2);
}

// The page's strip geometry (app.js): label column, the all-threads bar
// chart, then one row per thread.
const TL_LABEL = 170, TL_ALL = 26, TL_ROW = 13;
const MS = 1000000;
await withBrowser({}, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

  async function open(hash) {
    await page.goto('about:blank');
    await page.goto(url + hash);
    await page.waitForSelector('body[data-ready="1"]', { state: 'attached' });
  }
  const text = (sel) => page.locator(sel).evaluate((e) => e.textContent.trim());
  const hashParams = () => page.evaluate(() => Object.fromEntries(new URLSearchParams(location.hash.slice(1))));
  // The top table's total once it shows `want` (the summary's last word).
  const topTotal = async (want) => {
    if (want !== undefined)
      await page.waitForFunction((w) => document.getElementById('top-summary').textContent.endsWith(`total ${w}`), want)
        .catch(() => {});
    return (await text('#top-summary')).replace(/^.* total /, '');
  };
  const names = () => page.locator('#top-table tbody td.name').allTextContents();

  // Is the strip of thread row r inked at time t (ns)?
  async function inkAt(r, t) {
    return page.evaluate(([r, t, L, A, R]) => {
      const c = document.getElementById('timeline'), W = c.clientWidth, k = c.width / W;
      const x = L + t / 1e9 * (W - L), y = A + r * R + R / 2;
      const d = c.getContext('2d').getImageData(Math.round(x * k), Math.round(y * k), 1, 1).data;
      return d[0] < 230 && d[2] < 200;   // the strip's rust, not the row's white or beige
    }, [r, t, TL_LABEL, TL_ALL, TL_ROW]);
  }

  if (heapMode) {
    await open('#v=top&type=allocated');
    check(!(await page.locator('#timeline-view').isHidden()), 'heap: the chart is shown');
    check(await text('#tl-title') === 'memory over time', 'heap: titled memory over time', await text('#tl-title'));
    check(/^heap peak 2\.86MB at /.test(await text('#tl-summary')), 'heap: the peak named', await text('#tl-summary'));
    await topTotal('3.34MB');
    check(await topTotal() === '3.34MB', 'heap: whole run allocated 3,500,000 bytes', await topTotal());
    // Near the chart's top (3 MB of 3 MB) the line is inked during phase
    // two, not before it.
    const inkTop = (t) => page.evaluate(([t, L]) => {
      const c = document.getElementById('timeline'), W = c.clientWidth, k = c.width / W;
      const d = c.getContext('2d').getImageData(Math.round((L + t / window.tlData.end * (W - L)) * k), Math.round(12 * k), 1, 1).data;
      return d[3] > 0 && d[0] < 230;
    }, [t, TL_LABEL]);
    await page.evaluate(() => { window.tlData = tlData; });
    // R2 is in the pause after phase two, the middle of the 3 MB plateau
    // (halfway between R1 and R2 can fall before phase two when the
    // program starts slowly on a loaded machine: once seen in CI).
    check(await inkTop(+R2) && !(await inkTop(+R1 / 2)), 'heap: the line is high after phase two only');
    await page.screenshot({ path: join(shotDir, 'heap-line.png') });
    // A link with the range between the pauses: phase_two's 2,000,000.
    await open(`#v=top&type=allocated&t0=${R1}&t1=${R2}`);
    check(await topTotal('1.91MB') === '1.91MB', 'heap: allocated in the range', await topTotal());
    let rows = await names();
    check(rows.includes('phase_two') && !rows.includes('phase_one') && !rows.includes('phase_three'),
      'heap: only phase_two allocated in the range', rows);
    await open(`#v=top&type=peak&t0=${R1}&t1=${R2}`);
    check(await topTotal('2.86MB') === '2.86MB', 'heap: the peak within the range', await topTotal());
    // A drag from the first pause to the second selects the same phase.
    await open('#v=top&type=leaked');
    const box = await page.locator('#timeline').boundingBox();
    const end = await page.evaluate(() => tlData.end);
    const xAt = (ns) => box.x + TL_LABEL + ns / end * (box.width - TL_LABEL);
    await page.mouse.move(xAt(+R1), box.y + 40);
    await page.mouse.down();
    await page.mouse.move(xAt((+R1 + +R2) / 2), box.y + 45, { steps: 4 });
    await page.mouse.move(xAt(+R2), box.y + 45, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).has('t0'));
    check(await topTotal('1.91MB') === '1.91MB', 'heap: a drag over phase two: its 2,000,000 bytes still live at the end', await topTotal());
    rows = await names();
    check(JSON.stringify(rows.filter((n) => n.startsWith('phase'))) === '["phase_two"]', 'heap: leaked in the range is phase_two', rows);
    await page.screenshot({ path: join(shotDir, 'heap-range.png') });
    check(errors.length === 0, 'no console errors', errors);
    return;
  }

  await open('#v=top&type=samples');
  check(!(await page.locator('#timeline-view').isHidden()), 'the strip is shown for an input with times');
  await topTotal('1200');
  check(await topTotal() === '1200', 'whole run: 1200 samples', await topTotal());
  check((await text('#tl-summary')).startsWith('2 threads'), 'summary counts 2 threads', await text('#tl-summary'));
  // Rows: alpha (busiest first by total; equal totals go by tid) then beta.
  const ink = [];
  for (const [r, t] of [[0, 100], [0, 550], [0, 700], [0, 950], [1, 100], [1, 350], [1, 450], [1, 950]])
    ink.push(await inkAt(r, t * MS));
  check(JSON.stringify(ink) === JSON.stringify([true, true, false, false, false, false, true, true]),
    'alpha drawn in 0-600 ms, beta in 400-1000 ms', ink);
  await page.screenshot({ path: join(shotDir, 'timeline.png') });

  // Drag from 100 ms to 300 ms: only phase_one, about 200 samples.
  const box = await page.locator('#timeline').boundingBox();
  const xAt = (ms) => box.x + TL_LABEL + ms / 1000 * (box.width - TL_LABEL);
  const y = box.y + TL_ALL + TL_ROW / 2;
  await page.mouse.move(xAt(100.5), y);
  await page.mouse.down();
  await page.mouse.move(xAt(200), y + 5, { steps: 4 });
  await page.mouse.move(xAt(299.5), y + 5, { steps: 4 });
  await page.mouse.up();
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).has('t0'));
  let h = await hashParams();
  const t0 = +h.t0, t1 = +h.t1;
  check(Math.abs(t0 - 100 * MS) <= 3 * MS && Math.abs(t1 - 300 * MS) <= 3 * MS && t0 % MS === 0 && t1 % MS === 0,
    'the drag selects about 100-300 ms, in whole milliseconds', h);
  const n = String((t1 - t0) / MS);
  check(await topTotal(n) === n, `the top table holds the range's ${n} samples`, await topTotal());
  let rows = await names();
  check(rows.includes('phase_one') && !rows.includes('phase_two'), 'only phase_one in 100-300 ms', rows);
  check(/^0\.10\d s – 0\.30\d s/.test(await text('#tl-range')), 'the range is named', await text('#tl-range'));
  check(!(await page.locator('#tl-clear').isHidden()), '"whole run" is offered');
  await page.screenshot({ path: join(shotDir, 'timeline-range.png') });

  // The flame graph of the same range: phase_two absent.
  await page.locator('#tab-flame').click();
  await page.waitForFunction(() => typeof flameData !== 'undefined' && flameData && flameData.nodes.length > 0);
  const fl = await page.evaluate(() => ({ total: flameData.total, names: flameData.names }));
  check(fl.total === (t1 - t0) / MS && fl.names.includes('phase_one') && !fl.names.includes('phase_two'),
    'the flame graph follows the range', fl);
  // The save links carry it.
  const href = await page.locator('#downloads a[data-format="collapsed"]').getAttribute('href');
  check(href.includes(`t0=${t0}`) && href.includes(`t1=${t1}`), 'downloads carry the range', href);

  // A link with a range reproduces it.
  await open(`#v=top&type=samples&t0=${450 * MS}&t1=${550 * MS}`);
  check(await topTotal('200') === '200', 'a link with 450-550 ms: 200 samples, both threads', await topTotal());
  rows = await names();
  check(rows.includes('phase_one') && rows.includes('phase_two'), 'both phases in 450-550 ms', rows);

  // A double-click on the strips: the whole run again.
  await page.locator('#timeline').dblclick({ position: { x: TL_LABEL + 50, y: 10 } });
  await page.waitForFunction(() => !new URLSearchParams(location.hash.slice(1)).has('t0'));
  check(await topTotal('1200') === '1200', 'double-click: the whole run', await topTotal());
  check(await page.locator('#tl-clear').isHidden(), 'no range named');

  // The untimed input: no strip.
  await open('#p=1&v=top');
  check(await page.locator('#timeline-view').isHidden(), 'no strip for an input without times');

  check(errors.length === 0, 'no console errors', errors);
});
