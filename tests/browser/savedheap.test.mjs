// SPDX-License-Identifier: Apache-2.0
// The Heap tab in a page saved by kiln serve (issue 26): opened from
// file:// in headless chromium with every network request refused, the
// saved page of a kiln heap trace of tests/workloads/heapsites (three
// sites of known growth, six known leaks) shows the per-site chart cut
// to the number of sites asked (the legend's three labels and "other"),
// the allocations over time, and the allocation list alive at the end:
// the six leaks, filtered offline by lifetime and size as the server
// filters; a list the page does not hold (not "alive at the end") says
// so.  The saved page of a CPU profile has no Heap tab.  No console
// error, no network request.
//
// Usage: node savedheap.test.mjs HEAP.html CPU.html SHOTDIR
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, offline, withBrowser } from './lib.mjs';

const [heap, cpu, shotDir] = process.argv.slice(2);
if (!shotDir) {
  console.error('usage: node savedheap.test.mjs HEAP.html CPU.html SHOTDIR');
  process.exit(2);
}
const LEAKS = [['grow_a', 40000], ['grow_a', 40000], ['grow_a', 40000],
  ['grow_b', 24000], ['grow_b', 24000], ['grow_c', 8000]];
const key = (l) => JSON.stringify(l.map(([s, n]) => [s, n]).sort());

await withBrowser({ viewport: { width: 1300, height: 1000 }, args: ['--allow-file-access-from-files'] },
  async (context, page) => {
    const { errors, network } = await offline(context, page);
    const text = (sel) => page.locator(sel).evaluate((e) => e.textContent.trim());
    const rows = async () => page.$$eval('#heap-allocs tbody tr', (rs) => rs.map((r) =>
      [r.children[4].textContent.split(' ')[0], +r.dataset.size, r.children[1].textContent]));
    async function open(file, hash) {
      await page.goto('about:blank');
      await page.goto('file://' + file + hash);
      await page.waitForSelector('body[data-ready="1"]', { state: 'attached' });
    }

    await open(heap, '#v=heap&hn=3');
    check(await page.locator('#error').isHidden(), 'no error', await text('#error'));
    check(!(await page.isHidden('#tab-heap')), 'the saved page of a heap trace has the Heap tab');
    await page.waitForFunction(() => document.querySelector('#heap-sites').dataset.drawn &&
      document.querySelector('#ha-summary').dataset.count === '6');
    const labels = await page.$$eval('#heap-legend li .lab', (ls) => ls.map((l) => l.textContent));
    check(labels.length === 3 && /^grow_a /.test(labels[0]) && /^grow_b /.test(labels[1]) && /^grow_c /.test(labels[2]),
      'the chart cut to the three sites asked, largest first', labels);
    const legend = await page.$$eval('#heap-legend li', (ls) => ls.map((l) => l.textContent));
    check(/^other \(1 more site\)/.test(legend[3] || ''), 'the rest is "other"', legend[3]);
    const maxes = await page.$$eval('#heap-legend li[data-stack]', (ls) => ls.map((l) => +l.dataset.max));
    check(JSON.stringify(maxes) === '[2400000,1440000,480000]', 'each site\'s largest size is its known growth', maxes);
    check(/780 allocations, 600 temporary/.test(await text('#heap-counts-sum')),
      'allocations and temporary allocations over time', await text('#heap-counts-sum'));
    const got = await rows();
    check(key(got) === key(LEAKS), 'the list alive at the end: the six leaks', got);
    await page.screenshot({ path: join(shotDir, 'saved-heap.png'), fullPage: true });

    // Five sites asked: all four, nothing in "other".
    await open(heap, '#v=heap&hn=5');
    await page.waitForFunction(() => document.querySelector('#heap-sites').dataset.drawn);
    check((await page.$$eval('#heap-legend li[data-stack]', (ls) => ls.length)) === 4, 'five asked: the four sites');

    // Filters, offline: lifetime at least 1 s keeps the six; at least
    // 30000 bytes keeps grow_a's three; the size table follows.
    await open(heap, '#v=heap');
    await page.waitForFunction(() => document.querySelector('#ha-summary').dataset.count === '6');
    await page.fill('#ha-lmin', '1');
    await page.click('#ha-apply');
    await page.waitForFunction(() => location.hash.includes('life_min'));
    await page.waitForFunction(() => document.querySelector('#ha-summary').dataset.count === '6');
    check(key(await rows()) === key(LEAKS), 'lifetime >= 1 s: the six leaks', await rows());
    await page.fill('#ha-smin', '30000');
    await page.click('#ha-apply');
    await page.waitForFunction(() => document.querySelector('#ha-summary').dataset.count === '3');
    const big = await rows();
    check(big.length === 3 && big.every(([s, n]) => s === 'grow_a' && n === 40000), 'size >= 30000: grow_a\'s three', big);
    const sizes = await page.$$eval('#ha-sizes tbody tr', (rs) => rs.map((r) => r.children[1].textContent));
    check(sizes.length === 1 && sizes[0] === '3', 'the size table of what passed', sizes);
    check(await page.locator('#error').isHidden(), 'no error after the filters', await text('#error'));
    await page.screenshot({ path: join(shotDir, 'saved-heap-filtered.png'), fullPage: true });

    // A list the page does not hold: said.
    await page.selectOption('#ha-alive', '');
    await page.click('#ha-apply');
    await page.waitForFunction(() => !document.querySelector('#error').hidden);
    check(/not in this saved page/.test(await text('#error')), 'a list it does not hold: said', await text('#error'));

    // A CPU profile's saved page: no Heap tab.
    await open(cpu, '#v=flame');
    check(await page.isHidden('#tab-heap'), 'no Heap tab for a CPU profile');

    check(network.length === 0, 'no network request', network);
    check(errors.length === 0, 'no console errors', errors);
  });
