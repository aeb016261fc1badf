// SPDX-License-Identifier: Apache-2.0
// kiln serve's Heap tab in headless chromium, on a kiln heap trace of
// tests/workloads/heapsites (three sites of known growth and six known
// leaks, each over 1 s old at the end by construction): the per-site
// chart is drawn with a legend of three distinct labels naming the
// sites and "other"; hovering names the sites' sizes; allocations over
// time and the size histogram are there; the allocation list filtered to
// "alive at the end, lifetime at least 1 s" is exactly the six leaks, and
// its link (hf= in the URL) gives the same list; the call tree links
// carry the heap type; a profile that is no heap trace has no Heap tab.
//
// Usage: node heap.test.mjs URL SHOTDIR
//   URL: kiln serve of the heap trace (input 0) and any other profile
//   (input 1).
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const [url, shotDir] = process.argv.slice(2);
if (!url || !shotDir) {
  console.error('usage: node heap.test.mjs URL SHOTDIR');
  process.exit(2);
}
const LEAKS = [['grow_a', 40000], ['grow_a', 40000], ['grow_a', 40000],
  ['grow_b', 24000], ['grow_b', 24000], ['grow_c', 8000]];

await withBrowser({ viewport: { width: 1300, height: 1000 } }, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));

  await page.goto(`${url}#v=heap&hn=3`);
  // The list opens on the leaks (alive at the end, the default filter).
  await page.waitForFunction(() => document.querySelector('#ha-summary').dataset.count === '6');
  await page.waitForFunction(() => document.body.dataset.ready === '1' &&
    document.querySelector('#heap-sites').dataset.drawn);
  check(await page.$eval('#tab-heap', (e) => !e.hidden), 'a heap trace has the Heap tab');
  const legend = await page.$$eval('#heap-legend li', (ls) => ls.map((l) => l.textContent));
  const labels = await page.$$eval('#heap-legend li .lab', (ls) => ls.map((l) => l.textContent));
  check(labels.length === 3 && labels[0].startsWith('grow_a (heapsites.c:') &&
    labels[1].startsWith('grow_b (heapsites.c:') && labels[2].startsWith('grow_c (heapsites.c:'),
  'the legend names the three sites, largest first', labels);
  check(new Set(labels).size === labels.length, 'the legend\'s labels are distinct', labels);
  check(/^other \(1 more site\)/.test(legend[3] || ''), 'the rest is "other"', legend[3]);
  const maxes = await page.$$eval('#heap-legend li[data-stack]', (ls) => ls.map((l) => +l.dataset.max));
  check(JSON.stringify(maxes) === '[2400000,1440000,480000]', 'each site\'s largest size is its known growth', maxes);
  // Drawn: the chart holds the first site's colour.
  const painted = await page.$eval('#heap-sites', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] === 0x4e && d[i + 1] === 0x79 && d[i + 2] === 0xa7) n++;
    return n;
  });
  check(painted > 1000, 'the chart is drawn (grow_a\'s band)', painted);
  const box = await page.$eval('#heap-sites', (c) => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; });
  await page.mouse.move(box[0] + box[2] * 0.15, box[1] + box[3] / 2);
  const tip = await page.$eval('#tip', (t) => (t.hidden ? '' : t.textContent));
  check(tip.includes('grow_a') && tip.includes('grow_c') && tip.includes('heap'), 'hover names every site\'s size', tip);
  check(/780 allocations, 600 temporary/.test(await page.$eval('#heap-counts-sum', (e) => e.textContent)),
    'allocations and temporary allocations over time', await page.$eval('#heap-counts-sum', (e) => e.textContent));
  const sizeRows = await page.$$eval('#heap-size-table tbody tr', (rs) => rs.map((r) => r.children[1].textContent));
  check(sizeRows.length === 4 && sizeRows[0] === '600', 'the size histogram', sizeRows);
  await page.screenshot({ path: join(shotDir, 'heap.png'), fullPage: true });

  // The allocation list: alive at the end, lifetime at least 1 s.
  check(await page.$eval('#ha-alive', (e) => e.value) === 'end', 'the list opens on alive at the end');
  await page.selectOption('#ha-alive', 'end');
  await page.fill('#ha-lmin', '1');
  await page.click('#ha-apply');
  await page.waitForFunction(() => document.querySelector('#ha-summary').dataset.count === '6' &&
    location.hash.includes('hf='));
  const rows = async () => page.$$eval('#heap-allocs tbody tr', (rs) => rs.map((r) =>
    [r.children[4].textContent.split(' ')[0], +r.dataset.size, r.children[1].textContent]));
  const got = await rows();
  const key = (l) => JSON.stringify(l.map(([s, n]) => [s, n]).sort());
  check(key(got) === key(LEAKS), 'alive at the end, lifetime >= 1 s: exactly the known leaks', got);
  check(got.every((r) => r[2] === 'live at the end'), 'none of them freed', got.map((r) => r[2]));
  const hash = await page.evaluate(() => location.hash);
  check(/hf=alive%3Dend%26life_min%3D1000000000/.test(hash), 'the filter is in the URL', hash);
  await page.screenshot({ path: join(shotDir, 'heap-leaks.png'), fullPage: true });
  // The link reproduces the list.
  await page.goto('about:blank');
  await page.goto(`${url}${hash}`);
  await page.waitForFunction(() => document.body.dataset.ready === '1' &&
    document.querySelector('#ha-summary').dataset.count === '6');
  check(key(await rows()) === key(LEAKS), 'the link gives the same list', await rows());
  check(await page.$eval('#ha-alive', (e) => e.value) === 'end' && await page.$eval('#ha-lmin', (e) => e.value) === '1',
    'the form shows the link\'s filters');
  // Lifetime at least 1 s alone: every block kept through the wait, paged.
  await page.selectOption('#ha-alive', '');
  await page.click('#ha-apply');
  await page.waitForFunction(() => document.querySelector('#ha-summary').dataset.count === '180');
  check((await rows()).length === 100 && !(await page.$eval('#ha-next', (b) => b.disabled)),
    'a page of 100 of the 180 blocks, with a next page');
  await page.click('#ha-next');
  await page.waitForFunction(() => document.querySelectorAll('#heap-allocs tbody tr').length === 80);
  check(await page.$eval('#ha-summary', (e) => e.textContent.includes('showing 101–180')), 'the next page',
    await page.$eval('#ha-summary', (e) => e.textContent));
  // The call tree per cost type: the links carry the type.
  const links = await page.$$eval('#heap-trees a', (as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
  const leakedUp = links.find(([t]) => t === 'leaked bottom-up');
  check(leakedUp && /v=calltree/.test(leakedUp[1]) && /type=leaked/.test(leakedUp[1]) && /rev=1/.test(leakedUp[1]),
    'a link to the leaked bottom-up call tree', links);

  // A profile that is no heap trace: no Heap tab.
  await page.goto(`${url}#v=flame&p=1`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  check(await page.$eval('#tab-heap', (e) => e.hidden), 'no Heap tab for a CPU profile');
  check(errors.length === 0, 'no console errors', errors);
});
