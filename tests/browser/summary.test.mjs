// SPDX-License-Identifier: Apache-2.0
// kiln serve's summary view in headless chromium: a profile kiln recorded
// shows its known command line, host, event and sample count; a time range
// narrows the selection's part and not the profile's; a kiln heap trace
// shows kiln heap's calls, temporary, peak and leaked.
//
// Usage: node summary.test.mjs URL EXPECT.json SHOTDIR
//   URL: kiln serve of a kiln record profile (input 0) and, when
//   EXPECT.json has "heap", a kiln heap trace (input 1).
//   EXPECT.json: {"command": "...", "host": "...", "samples": N,
//   "heap": {"calls": N, "temporary": N, "peak": "...", "leaked": "..."}}
// Exit status 0 when every check passes, 1 otherwise.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const [url, expectPath, shotDir] = process.argv.slice(2);
if (!url || !expectPath || !shotDir) {
  console.error('usage: node summary.test.mjs URL EXPECT.json SHOTDIR');
  process.exit(2);
}
const want = JSON.parse(readFileSync(expectPath, 'utf8'));
const num = (s) => +s.replace(/,/g, '');

await withBrowser({ viewport: { width: 1300, height: 900 } }, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  const text = (id) => page.$eval(`#sum-${id}`, (e) => e.textContent);

  await page.goto(`${url}#v=summary`);
  await page.waitForSelector('#sum-command');
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  check(await text('command') === want.command, 'the command line is the recorded one', await text('command'));
  check((await text('host')).startsWith(want.host + ', kernel '), 'the host is this machine', await text('host'));
  check(await text('event') === 'cpu-clock, frequency 999 Hz · cpu (nanoseconds)', 'the event is kiln record\'s', await text('event'));
  check(/\d+ Hz/.test(await text('period')), 'the period says its frequency', await text('period'));
  check(num(await text('samples')) === want.samples, 'the sample count is kiln record\'s', await text('samples'));
  check(num(await text('sel-samples')) === want.samples, 'the whole run is selected', await text('sel-samples'));
  check((await text('version')).startsWith('kiln '), 'kiln\'s version is shown', await text('version'));
  check(await text('file') === want.file, 'the input file is named', await text('file'));
  await page.screenshot({ path: join(shotDir, 'summary.png'), fullPage: true });

  // A time range (the first half of the run) narrows the selection only.
  const span = await page.evaluate(async () => (await (await fetch('/api/summary?p=0')).json()).time_span);
  const mid = Math.floor((span[0] + span[1]) / 2);
  await page.goto(`${url}#v=summary&t0=0&t1=${mid}`);
  await page.waitForFunction((s) => document.querySelector('#sum-sel-samples') &&
    +document.querySelector('#sum-sel-samples').textContent.replace(/,/g, '') < s, want.samples);
  const part = num(await text('sel-samples'));
  check(part > 0 && part < want.samples && num(await text('samples')) === want.samples,
    'a time range: the selection holds part of the samples, the profile all', { part });

  if (want.heap) {
    await page.goto(`${url}#v=summary&p=1`);
    await page.waitForSelector('#sum-calls');
    check(num(await text('calls')) === want.heap.calls, 'heap: calls are kiln heap\'s', await text('calls'));
    check(num((await text('temporary')).split(' ')[0]) === want.heap.temporary, 'heap: temporary allocations', await text('temporary'));
    check((await text('peak')).includes(want.heap.peak), 'heap: the peak and its blocks', await text('peak'));
    check((await text('leaked')).includes(want.heap.leaked), 'heap: leaked bytes and blocks', await text('leaked'));
    check(await text('command') !== 'not recorded', 'heap: the traced command line', await text('command'));
    await page.screenshot({ path: join(shotDir, 'summary-heap.png'), fullPage: true });
  }
  check(errors.length === 0, 'no console errors', errors);
});
