// SPDX-License-Identifier: Apache-2.0
// The stack chart in a page saved by kiln serve (issue 26): opened from
// file:// in headless chromium with every network request refused, the
// saved page of a two-phase recording shows the main thread's stack chart
// with phase_a before phase_b along time (read back by hovering across
// it, as a user would), hovering shows the stack and the time, the wheel
// zooms in (the window drawn narrows, in the URL too) and still draws the
// phases, a window given in the URL is drawn; the disassembly of burn_a
// (a hot function) is there with its samples; the saved page of a profile
// without times says that there is no stack chart, and without binaries
// has no disassembly tab.  No console error, no network request.
//
// Usage: node savedstack.test.mjs TP.html PLAIN.html SHOTDIR
//   TP.html: the saved page of a kiln record of tests/workloads/twophase.
//   PLAIN.html: the saved page of a folded profile (no times).
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, drawnWindow, offline, stackScan, stackSettled, withBrowser } from './lib.mjs';

const [tp, plain, shotDir] = process.argv.slice(2);
if (!shotDir) {
  console.error('usage: node savedstack.test.mjs TP.html PLAIN.html SHOTDIR');
  process.exit(2);
}

// The row where phase_a or phase_b is found, and what it holds.
async function phaseRow(page) {
  for (let r = 2; r < 8; r++) {
    const hits = await stackScan(page, r);
    if (hits.some((h) => /^phase_/.test(h.name))) return [r, hits];
  }
  return [-1, []];
}

await withBrowser({ args: ['--allow-file-access-from-files'] }, async (context, page) => {
  // No network: anything but the file itself is refused and recorded.
  const { errors, network } = await offline(context, page);
  const text = (sel) => page.locator(sel).evaluate((e) => e.textContent.trim());
  async function open(file, hash) {
    await page.goto('about:blank');
    await page.goto('file://' + file + hash);
    await page.waitForSelector('body[data-ready="1"]', { state: 'attached' });
    check(await page.locator('#error').isHidden(), `${file.replace(/^.*\//, '')}${hash}: no error`, await text('#error'));
  }

  await open(tp, '#v=stackchart');
  check(!(await page.isHidden('#tab-stackchart')), 'the stack chart tab is there');
  check(await page.isHidden('#sc-empty'), 'the stack chart is drawn (no "no stack chart" note)', await text('#sc-empty'));
  await stackSettled(page);
  const thread = await page.$eval('#sc-thread', (s) => s.options[s.selectedIndex].textContent);
  check(/^twophase /.test(thread), 'the busiest thread is the program\'s main thread', thread);
  const [row, hits] = await phaseRow(page);
  const names = hits.map((h) => h.name).filter((n) => /^phase_/.test(n));
  const lastA = names.lastIndexOf('phase_a'), firstB = names.indexOf('phase_b');
  check(lastA >= 0 && firstB >= 0 && lastA < firstB, 'phase_a is before phase_b along time', names.join(' '));
  const a = hits.find((h) => h.name === 'phase_a');
  check(a && /main/.test(a.text) && /\d s/.test(a.text) && /stack \(root first\)/.test(a.text),
    'hover shows the stack and the time', a && a.text);
  await page.screenshot({ path: join(shotDir, 'saved-stackchart.png') });

  // The wheel at phase_a's last pixel and phase_b's first: the window
  // narrows around it, and both phases are still drawn there.
  const [f0, t0] = await drawnWindow(page);
  const edge = hits.filter((h) => h.name === 'phase_a').pop();
  const cb = await page.$eval('#stackchart', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.top]; });
  await page.mouse.move(cb[0] + (edge ? edge.x : 300), cb[1] + 30);
  for (let i = 0; i < 4; i++) await page.mouse.wheel(0, -200);
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).has('sx'));
  await stackSettled(page);
  const [f1, t1] = await drawnWindow(page);
  check(f1 > f0 && t1 < t0 && (t1 - f1) < (t0 - f0) / 2, 'the wheel zooms in', [f0, t0, f1, t1]);
  const zoomed = (await stackScan(page, row)).map((h) => h.name).filter((n) => /^phase_/.test(n));
  const za = zoomed.lastIndexOf('phase_a'), zb = zoomed.indexOf('phase_b');
  check(za >= 0 && zb >= 0 && za < zb, 'zoomed in at the phase change: phase_a, then phase_b', zoomed.join(' '));
  const summary = await text('#sc-summary');
  check(/\d+ samples?, \d+ runs? drawn/.test(summary), 'the zoomed window says what it drew', summary);
  await page.screenshot({ path: join(shotDir, 'saved-stackchart-zoom.png') });

  // A window given in the URL, inside phase_b (from the saved runs: a
  // loaded machine stretches either phase in wall time): drawn.
  const w = await page.evaluate(() => {
    const T = window.KILN_OFFLINE.types.find((x) => x.stackchart), d = T.stackchart.by_thread[0];
    const has = (r, fn) => d.stacks[r[2]].some((f) => d.names[d.frames[f][0]] === fn);
    const b0 = Math.min(...d.runs.filter((r) => has(r, 'phase_b')).map((r) => r[0]));
    const b1 = Math.max(...d.runs.filter((r) => has(r, 'phase_b')).map((r) => r[1]));
    return [Math.round(b0 + 0.2 * (b1 - b0)), Math.round(b0 + 0.6 * (b1 - b0))];
  });
  await open(tp, `#v=stackchart&sx=${w[0]},${w[1]}`);
  await stackSettled(page);
  const [f2, t2] = await drawnWindow(page);
  check(Math.abs(f2 - w[0]) <= 1 && Math.abs(t2 - w[1]) <= 1, 'a window from the URL is drawn', [w, f2, t2]);
  const late = (await stackScan(page, row)).map((h) => h.name);
  check(late.includes('phase_b') && !late.includes('phase_a'), 'late in the run: phase_b alone', late.join(' '));

  // The disassembly of a hot function, as saved (its binary was read
  // when the page was saved): burn_a's instructions, its loop sampled.
  await open(tp, '#v=disasm&fn=burn_a');
  check(!(await page.isHidden('#tab-disasm')), 'the disassembly tab is there');
  await page.waitForFunction(() => document.querySelectorAll('#da-table tbody tr.insn').length > 0);
  const da = await text('#da-summary');
  check(/^burn_a in twophase /.test(da), 'the disassembly of burn_a', da);
  const hot = await page.$$eval('#da-table tbody tr.insn', (rs) => rs.filter((r) => r.cells[0].textContent).length);
  check(hot > 0, 'instructions of burn_a carry samples', hot);
  await page.screenshot({ path: join(shotDir, 'saved-disasm.png') });

  // No times: the tab says so, as the live page does.
  await open(plain, '#v=stackchart');
  check(!(await page.isHidden('#sc-empty')) && /no sample times/.test(await text('#sc-empty')),
    'a profile without times: the stack chart says it has none', await text('#sc-empty'));
  await page.screenshot({ path: join(shotDir, 'saved-stackchart-plain.png') });
  check(await page.isHidden('#tab-disasm'), 'no binary: no disassembly tab');

  check(network.length === 0, 'no network request', network);
  check(errors.length === 0, 'no console errors', errors);
});
