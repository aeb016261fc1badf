// SPDX-License-Identifier: Apache-2.0
// kiln serve's label filter bar in headless chromium: it lists the
// profile's labels with their values by total, keep and drop narrow every
// view (the top table here) and show as removable chips in the URL, and
// group by roots the call tree at one node per value.
//
// Usage: node labels.test.mjs URL SHOTDIR
//   URL: a kiln serve of this perf script (1 ms per sample):
//     server 100/101: main;burn_a   server 100/102: main;burn_b (2 samples)
//     batch 200/200: main;burn_c  (other program)
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const [url, shotDir] = process.argv.slice(2);
if (!url || !shotDir) {
  console.error('usage: node labels.test.mjs URL SHOTDIR');
  process.exit(2);
}

const topNames = (page) => page.$$eval('#top-table tbody tr', (trs) =>
  trs.map((tr) => tr.cells[tr.cells.length - 1].textContent.trim()));
const hash = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));

await withBrowser({}, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));

  await page.goto(`${url}#v=top`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.waitForSelector('#labels-bar:not([hidden])');
  const keys = await page.$$eval('#lb-key option', (os) => os.map((o) => o.value));
  check(keys.join(' ') === 'pid thread thread_name', 'the bar lists the labels (not time)', keys);
  await page.selectOption('#lb-key', 'thread_name');
  const vals = await page.$$eval('#lb-value option', (os) => os.map((o) => o.textContent));
  check(vals.join('|') === 'server (3ms)|batch (1ms)', 'values heaviest first with their totals', vals);

  await page.selectOption('#lb-value', 'batch');
  await page.click('#lb-keep');
  await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length === 2);
  check((await topNames(page)).join(' ') === 'burn_c main', 'keep thread_name=batch: only its functions', await topNames(page));
  check(hash(page).get('lf') === 'thread_name=batch', 'the condition is in the URL', page.url());
  // (The chips are drawn with the rest of the page after the table: wait
  // for them rather than read them at once -- empty once under load.)
  await page.waitForFunction(() => document.querySelector('#lb-chips').textContent !== '', null,
    { timeout: 60000 }).catch(() => {});
  check(await page.textContent('#lb-chips') === 'thread_name=batch×', 'a chip shows it', await page.textContent('#lb-chips'));
  await page.screenshot({ path: join(shotDir, 'labels-keep.png') });

  // Remove it, drop thread 102 instead.
  await page.click('#lb-chips a');
  await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length === 4);
  await page.selectOption('#lb-key', 'thread');
  await page.selectOption('#lb-value', '102');
  await page.click('#lb-drop');
  await page.waitForFunction(() => document.querySelectorAll('#top-table tbody tr').length === 3);
  check(!(await topNames(page)).includes('burn_b'), 'drop thread 102: burn_b is gone', await topNames(page));

  // Group by pid (a new URL: no conditions): the call tree starts at
  // pid=100 (3 ms) and pid=200 (1 ms).
  await page.goto(`${url}#v=calltree&g=pid`);
  await page.waitForFunction(() => [...document.querySelectorAll('#ct-table tbody tr[data-path]')].some((r) => r.dataset.path === 'pid=200'));
  const first = await page.$$eval('#ct-table tbody tr[data-path]', (trs) => trs
    .filter((tr) => !tr.dataset.path.includes(';')).map((tr) => `${tr.dataset.path} ${tr.cells[0].textContent}`));
  check(first.join(',') === 'pid=100 3ms,pid=200 1ms', 'group by pid: one root per process', first);
  check(await page.$eval('#lb-group', (s) => s.value) === 'pid', 'the group select says pid');
  await page.screenshot({ path: join(shotDir, 'labels-group.png') });
  check(errors.length === 0, 'no console errors', errors);
});
