// SPDX-License-Identifier: Apache-2.0
// kiln serve's disassembly view in headless chromium, on a kiln record of
// the shares workload: the flame graph's context menu opens burn_a's
// instructions; the hottest instruction lies in its loop (between a
// backward jump's target and the jump), which holds most of its self time;
// the loop's source line is shown above its instructions; the source
// view's "disassembly" link opens the same view.
//
// Usage: node disasm.test.mjs URL SHOTDIR
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const [url, shotDir] = process.argv.slice(2);
if (!url || !shotDir) {
  console.error('usage: node disasm.test.mjs URL SHOTDIR');
  process.exit(2);
}

const hash = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));
const rows = (page) => page.$$eval('#da-table tbody tr', (trs) => trs.map((tr) => ({
  cls: tr.className, addr: tr.dataset.addr || '', cells: [...tr.cells].map((td) => td.textContent),
})));
// A value cell ("12.1ms", "1.01s", "") as a number of the same unit scale.
const num = (s) => {
  const m = /^([\d.]+)\s*(ns|us|µs|ms|s)?$/.exec(s.trim());
  if (!m) return 0;
  return +m[1] * ({ ns: 1e-9, us: 1e-6, 'µs': 1e-6, ms: 1e-3, s: 1 }[m[2]] || 1);
};

await withBrowser({}, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));

  await page.goto(`${url}#v=flame`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  const at = await page.evaluate(() => {
    const i = flame.nodes.findIndex((n, k) => flame.name(k) === 'burn_a');
    if (i < 0) return null;
    const r = flame.geom(i), b = flame.c.getBoundingClientRect();
    return { x: b.left + r.x + Math.min(r.w / 2, 20), y: b.top + r.y + 9 };
  });
  check(at !== null, 'burn_a is in the flame graph');
  await page.mouse.click(at.x, at.y, { button: 'right' });
  await page.waitForSelector('#tf-menu:not([hidden])');
  await page.click('#tf-menu a[data-act="disasm"]');
  await page.waitForFunction(() => document.querySelectorAll('#da-table tr.insn').length > 3);
  check(hash(page).get('v') === 'disasm' && hash(page).get('fn') === 'burn_a', 'the menu opens v=disasm&fn=burn_a', page.url());

  const r = await rows(page);
  const insns = r.filter((x) => x.cls === 'insn');
  // The loop: a backward jump to an address of the function.
  const addrs = insns.map((x) => parseInt(x.addr, 16));
  let loop = null;
  insns.forEach((x, k) => {
    const m = /^j\w+ 0x([0-9a-f]+)$/.exec(x.cells[4]);
    if (m && !loop && parseInt(m[1], 16) >= addrs[0] && parseInt(m[1], 16) < addrs[k]) loop = [parseInt(m[1], 16), addrs[k]];
  });
  check(loop !== null, 'burn_a has a loop (a backward jump)', insns.map((x) => x.cells[4]));
  if (loop) {
    const self = insns.map((x) => num(x.cells[0]));
    const all = self.reduce((a, b) => a + b, 0);
    const inLoop = self.filter((v, k) => addrs[k] >= loop[0] && addrs[k] <= loop[1]).reduce((a, b) => a + b, 0);
    const hot = self.indexOf(Math.max(...self));
    check(addrs[hot] >= loop[0] && addrs[hot] <= loop[1], 'the hottest instruction is in the loop', insns[hot]);
    check(all > 0 && inLoop * 2 > all, `the loop holds most of burn_a's self time (${inLoop.toFixed(3)} of ${all.toFixed(3)})`);
  }
  const src = r.filter((x) => x.cls === 'srcline').map((x) => x.cells[4]);
  check(src.some((t) => t.includes('6364136223846793005ul')), 'the loop\'s source line is interleaved', src);
  check((await page.textContent('#da-summary')).startsWith('burn_a in shares (x86-64'), 'the summary names the symbol and binary',
    await page.textContent('#da-summary'));
  await page.screenshot({ path: join(shotDir, 'disasm-burn_a.png'), fullPage: true });

  // From the source view.
  await page.goto(`${url}#v=source&fn=stage_a`);
  await page.waitForFunction(() => document.querySelector('#src-summary').textContent.startsWith('stage_a'));
  await page.click('#src-disasm');
  await page.waitForFunction(() => document.querySelector('#da-summary').textContent.startsWith('stage_a'));
  const calls = (await rows(page)).filter((x) => x.cls === 'insn' && x.cells[2]).map((x) => x.cells[4]);
  check(calls.length === 1 && calls[0].startsWith('call '), 'stage_a\'s total is at its call', calls);
  check(errors.length === 0, 'no console errors', errors);
});
