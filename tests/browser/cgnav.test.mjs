// SPDX-License-Identifier: Apache-2.0
// kiln serve's call graph navigation in headless chromium: "fit" keeps
// the text readable on a graph too wide to fit, the wheel zooms around
// the pointer and a drag pans, and a click on a function opens its menu,
// whose "focus" gives the same graph as ?focus= does (and ignore, hide
// set their regexes alike).
//
// Usage: node cgnav.test.mjs URL SHOTDIR
//   URL: a kiln serve of a folded profile: main -> run -> f01 .. f40 (each
//   a different weight) and main -> run -> hot -> leaf.
// Exit status 0 when every check passes, 1 otherwise.
import { join } from 'node:path';
import { check, withBrowser } from './lib.mjs';

const [url, shotDir] = process.argv.slice(2);
if (!url || !shotDir) {
  console.error('usage: node cgnav.test.mjs URL SHOTDIR');
  process.exit(2);
}

const hash = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));
const viewBox = (page) => page.$eval('#cg svg', (s) => s.getAttribute('viewBox').split(' ').map(Number));
// The functions of a call graph SVG, sorted, and their hover texts.
const fnsOf = (svgText) => [...svgText.matchAll(/kiln-fn:([^"]*)"/g)].map((m) => decodeURIComponent(m[1])).sort();

await withBrowser({ viewport: { width: 1000, height: 700 } }, async (context, page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));

  await page.goto(`${url}#v=callgraph`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.waitForSelector('#cg svg a[data-fn]', { state: 'attached' });
  // Text height on screen: the SVG's font size times the scale.
  const textPx = await page.$$eval('#cg svg text', (ts) => Math.min(...ts.map((t) => t.getBoundingClientRect().height)));
  check(textPx >= 9, 'fit keeps the smallest text readable on a wide graph', textPx);
  await page.screenshot({ path: join(shotDir, 'cg-fit.png') });

  // Wheel in at the middle: a smaller viewBox (larger drawing).
  const vb0 = await viewBox(page);
  const cg = await page.$eval('#cg', (e) => { const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; });
  await page.mouse.move(cg[0], cg[1]);
  await page.mouse.wheel(0, -300);
  const vb1 = await viewBox(page);
  check(vb1[2] < vb0[2] * 0.8, 'the wheel zooms in', [vb0, vb1]);
  // Drag 100 px left: the view moves right by 100 px of screen.
  await page.mouse.down();
  await page.mouse.move(cg[0] - 50, cg[1], { steps: 2 });
  await page.mouse.move(cg[0] - 100, cg[1], { steps: 2 });
  await page.mouse.up();
  const vb2 = await viewBox(page);
  const scale = await page.$eval('#cg', (e) => +e.dataset.scale);
  check(Math.abs((vb2[0] - vb1[0]) * scale - 100) < 3 && vb2[1] === vb1[1], 'a drag pans', [vb1, vb2, scale]);
  check(hash(page).get('v') === 'callgraph' && !hash(page).has('focus'), 'a drag is not a click');

  // The node menu of "hot": focus.
  await page.goto(`${url}#v=callgraph`);
  await page.waitForSelector('#cg svg a[data-fn="hot"]', { state: 'attached' });
  await page.locator('#cg svg a[data-fn="hot"]').dispatchEvent('click');
  await page.waitForSelector('#cg-menu:not([hidden])');
  const items = await page.$$eval('#cg-menu button', (bs) => bs.map((b) => b.dataset.act));
  check(['focus', 'ignore', 'hide', 'sandwich'].every((x) => items.includes(x)), 'the menu has focus, ignore, hide, sandwich', items);
  await page.screenshot({ path: join(shotDir, 'cg-menu.png') });
  await page.click('#cg-menu button[data-act="focus"]');
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('focus') === '^hot$');
  await page.waitForFunction(() => !document.body.dataset.busy && !document.querySelector('#cg svg a[data-fn="f01"]'));
  const shown = (await page.$$eval('#cg svg a[data-fn]', (as) => as.map((a) => a.dataset.fn))).sort();
  const want = fnsOf(await page.evaluate(async () => (await fetch('/api/callgraph?focus=%5Ehot%24')).text()));
  check(shown.length > 0 && JSON.stringify(shown) === JSON.stringify(want), 'menu focus gives the graph of ?focus=', { shown, want });
  const titles = await page.$$eval('#cg svg g.node title', (ts) => ts.map((t) => t.textContent)
    .filter((t) => /\(total /.test(t)).sort());
  const wantTitles = await page.evaluate(async () => {
    const s = new DOMParser().parseFromString(await (await fetch('/api/callgraph?focus=%5Ehot%24')).text(), 'image/svg+xml');
    return [...s.querySelectorAll('g.node a')].map((a) => a.getAttribute('xlink:title'))
      .filter((t) => /\(total /.test(t)).sort();
  });
  check(JSON.stringify(titles) === JSON.stringify(wantTitles), 'with the same numbers', { titles, wantTitles });
  await page.screenshot({ path: join(shotDir, 'cg-focus.png') });

  // ignore and hide set theirs, anchored and quoted.
  await page.goto(`${url}#v=callgraph`);
  await page.waitForSelector('#cg svg a[data-fn="f01"]', { state: 'attached' });
  await page.locator('#cg svg a[data-fn="hot"]').dispatchEvent('click');
  await page.click('#cg-menu button[data-act="ignore"]');
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('ignore') === '^hot$');
  await page.waitForFunction(() => !document.body.dataset.busy && document.querySelector('#cg svg a[data-fn="f01"]') &&
    !document.querySelector('#cg svg a[data-fn="hot"]'));
  check(true, 'menu ignore drops hot');
  await page.locator('#cg svg a[data-fn="f01"]').dispatchEvent('click');
  await page.click('#cg-menu button[data-act="hide"]');
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('hide') === '^f01$');
  check(errors.length === 0, 'no console errors', errors);
});
