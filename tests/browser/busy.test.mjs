// SPDX-License-Identifier: Apache-2.0
// kiln serve's busy state (issue 22), driven by tests/e2e/t962: on a heap
// trace whose range analysis takes seconds, choosing a time range makes the
// page busy at once (body[data-busy], the views dimmed, #busy saying what
// the server does, from /api/status, with the range's progress); a newer
// range aborts the older one's requests; when the answer comes the busy
// state goes and the views show the new range, undimmed.
// usage: node busy.test.mjs URL SHOTS_DIR END_NS
import { check, withBrowser } from './lib.mjs';

const [url, shots, endArg] = process.argv.slice(2);
const end = +endArg;

await withBrowser({}, async (context, page) => {
  const aborted = [];
  page.on('requestfailed', (r) => aborted.push(`${r.url()} ${r.failure() && r.failure().errorText}`));
  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"]', { state: 'attached' });
  check(!(await page.$('body[data-busy]')), 'not busy once drawn');
  check(await page.isHidden('#busy'), '#busy hidden when idle');

  // A range; while it is analysed, a newer one: the first's requests
  // abort.  A try whose first range was answered before the newer range
  // was asked (a quick machine) cannot show the abort: tried again with
  // another range (at most 4 tries; what it shows is checked every time).
  const finished = [];
  page.on('requestfinished', (r) => finished.push(r.url()));
  let a0, b0, b1, tries = 0, inFlight = false;
  for (; tries < 4 && !inFlight; tries++) {
    a0 = Math.floor(end / 10) + tries;
    const a1 = Math.floor(end * 0.9);
    await page.evaluate(([t0, t1]) => { location.hash = `#t0=${t0}&t1=${t1}`; }, [a0, a1]);
    await page.waitForSelector('body[data-busy]', { state: 'attached' });
    check(await page.isVisible('#busy'), '#busy shown while a range is analysed');
    await page.waitForFunction(() => /analysing .*time range .*%/.test(document.getElementById('busy').textContent));
    const text = await page.textContent('#busy');
    check(/in\.trace\.zst: time range/.test(text), 'busy text names the input and the range', text);
    const dim = await page.evaluate(() => +getComputedStyle(document.getElementById('flame-view')).opacity);
    check(dim < 1, 'the old flame graph is dimmed while busy', dim);
    // The newer range at once, the screenshot after.
    b0 = Math.floor(end / 4) + tries;
    b1 = Math.floor(end / 2);
    inFlight = !finished.some((u) => u.includes(`t0=${a0}`));
    await page.evaluate(([t0, t1]) => { location.hash = `#t0=${t0}&t1=${t1}`; }, [b0, b1]);
    if (!tries)
      await page.screenshot({ path: `${shots}/busy.png` });
    await page.waitForFunction(() => !document.body.dataset.busy, null, { timeout: 300000 });
  }
  check(inFlight, 'the older range was still in flight when the newer one was asked', tries);
  check(aborted.some((x) => x.includes(`t0=${a0}`) && /ABORTED/.test(x)), 'the older range\'s request was aborted', aborted);
  check(await page.isHidden('#busy'), '#busy hidden once answered');
  check(await page.isHidden('#error'), 'no error shown', await page.textContent('#error'));
  const undim = await page.evaluate(() => +getComputedStyle(document.getElementById('flame-view')).opacity);
  check(undim === 1, 'the flame graph undimmed', undim);
  const hash = await page.evaluate(() => location.hash);
  check(hash.includes(`t0=${b0}`) && hash.includes(`t1=${b1}`), 'the newer range is the one shown', hash);
  const label = await page.textContent('#tl-range');
  check(label.trim() !== '', 'the range label is shown', label);
});
