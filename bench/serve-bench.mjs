// SPDX-License-Identifier: Apache-2.0
// bench/serve-bench.mjs: one timed run of a profile viewer in headless
// chromium, for bench/serve.sh.  Starts the viewer's server itself (so the
// clock starts with the server), waits for it to listen, opens its flame
// graph page and waits until the flame graph is drawn, then reads the
// page's JS heap (CDP Performance.getMetrics) and the server's and the
// renderer's peak RSS (VmHWM), and stops the server it started (by its PID).
// Prints one JSON line on stdout.
//
// Usage: node serve-bench.mjs VIEWER FILE [--interact N] [--timeout S]
//   VIEWER: kiln     `KILN serve --http 127.0.0.1:0 FILE` (KILN from env),
//                    page / (the Flame tab)
//           pprof    `PPROF -http=127.0.0.1:PORT -no_browser FILE` (PPROF:
//                    the binary `go tool -n pprof` names), page /ui/flamegraph
//           speedscope  speedscope's offline release (node_modules/speedscope/
//                    dist/release) and FILE served by a static server in this
//                    process, page index.html#profileURL=/profile/NAME
//   --interact N: (kiln only) after the first draw, N zooms in, N zooms out,
//     N searches (Enter) and N search clears (Escape), each timed from the
//     input event to the repaint; and a few searches typed key by key (the
//     page waits 250 ms after the last key before it asks).
//   --timeout S: give up after S seconds (default 600); the run reports
//     {"ok":false,"why":...}.
//   --gl off|swiftshader: off (default): --disable-gpu, the compositor and
//     canvases in software, as the project's browser tests run; swiftshader:
//     a GPU emulated on the CPU (ANGLE on SwiftShader), which WebGL needs
//     (speedscope draws with WebGL), and which makes every frame dearer.
//
// Times: t_listen (server start to its ready line), t_drawn (server start to
// the flame graph drawn: the page's own ready mark, then a frame rendered
// after it).  The browser is started, and its renderer warmed by a small
// page on 127.0.0.1 (warm_page_s), before the clock starts; each run has a
// fresh browser, so the renderer's peak RSS is this run's.
//
// Repaint detection needs no hook in the page: an init script wraps
// CanvasRenderingContext2D.prototype.clearRect, which the page's Graph.draw
// calls first on its canvas (#flame); the draw then runs to its end in the
// same task, so a requestAnimationFrame callback queued there runs after it,
// and a task queued from that callback runs after the frame was produced.
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createReadStream, readFileSync, statSync, existsSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// playwright-core and speedscope live in tests/browser/node_modules
// (scripts/deps.sh test installs them).
const browserDir = resolve(process.env.KILN_BROWSER_DIR || join(here, '../tests/browser'));
const { chromium } = createRequire(join(browserDir, 'package.json'))('playwright-core');
const args = process.argv.slice(2);
const viewer = args.shift();
const file = args.shift();
let interact = 0, timeoutS = 600, gl = 'off';
while (args.length) {
  const a = args.shift();
  if (a === '--interact') interact = +args.shift();
  else if (a === '--timeout') timeoutS = +args.shift();
  else if (a === '--gl') gl = args.shift();
  else { console.error(`serve-bench: unknown argument '${a}'`); process.exit(2); }
}
if (!['kiln', 'pprof', 'speedscope'].includes(viewer) || !file || !['off', 'swiftshader'].includes(gl)) {
  console.error('usage: node serve-bench.mjs kiln|pprof|speedscope FILE [--interact N] [--timeout S] [--gl off|swiftshader]');
  process.exit(2);
}

const result = { viewer, file: basename(file), ok: false, gl,
  load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') };
const deadline = Date.now() + timeoutS * 1000;
const left = () => Math.max(1000, deadline - Date.now());
let child = null;          // the server this run started
let staticServer = null;
let browser = null;

// User + system CPU seconds of a process so far.
function cpuSeconds(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (+f[11] + +f[12]) / 100;     /* utime, stime: fields 14, 15; USER_HZ 100 */
  } catch { return null; }
}

function vm(pid) {
  // VmHWM (peak RSS), VmRSS, RssAnon, RssFile of a process, in KiB.
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const get = (k) => { const m = s.match(new RegExp(`^${k}:\\s+(\\d+)`, 'm')); return m ? +m[1] : null; };
    return { hwm: get('VmHWM'), rss: get('VmRSS'), anon: get('RssAnon'), file: get('RssFile') };
  } catch { return null; }
}

// Starts CMD and resolves with the first match of RE on its stdout or
// stderr (the line a server prints once it listens).
function startServer(cmd, argv, env, re) {
  return new Promise((res, rej) => {
    child = spawn(cmd, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '', done = false;
    const timer = setTimeout(() => { if (!done) { done = true; rej(new Error(`no ready line after ${timeoutS} s`)); } }, left());
    const look = () => {
      const m = (out + '\n' + err).match(re);
      if (m && !done) { done = true; clearTimeout(timer); res(m); }
    };
    child.stdout.on('data', (d) => { out += d; look(); });
    child.stderr.on('data', (d) => {
      err += d;
      if (err.length > 1e5) err = err.slice(-5e4);
      // kiln: the profile is read, the default view is being built.
      if (child.tRead === undefined && /kiln serve: aggregating/.test(err)) child.tRead = performance.now();
      look();
    });
    child.on('exit', (code, sig) => {
      child.exited = true;
      if (!done) { done = true; clearTimeout(timer); rej(new Error(`exited (${code ?? sig}) before it listened: ${err.slice(-300).trim()}`)); }
    });
    child.getErr = () => err;
  });
}

async function stopServer() {
  if (!child || child.exited) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGINT');
  const t = setTimeout(() => { if (!child.exited) child.kill('SIGKILL'); }, 5000);
  await gone;
  clearTimeout(t);
}

// A static server for speedscope: its release folder and FILE at /profile/.
function startStatic(dir, profile) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
    '.png': 'image/png', '.ico': 'image/x-icon', '.wasm': 'application/wasm',
    '.woff2': 'font/woff2', '.json': 'application/json', '.txt': 'text/plain' };
  staticServer = createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    let p;
    if (u.pathname === '/warm') {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!DOCTYPE html><title>warm</title><canvas id="c"></canvas><script>' +
        'document.getElementById("c").getContext("2d").fillRect(0, 0, 10, 10)</script>');
      return;
    }
    if (profile && u.pathname === '/profile/' + basename(profile)) p = profile;
    else {
      const name = basename(decodeURIComponent(u.pathname));   // flat folder: no ..
      p = join(dir, name || 'index.html');
    }
    if (!existsSync(p)) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': types[extname(p)] || 'application/octet-stream',
      'Content-Length': statSync(p).size, 'Cache-Control': 'no-store' });
    createReadStream(p).pipe(res);
  });
  return new Promise((r) => staticServer.listen(0, '127.0.0.1', () => r(staticServer.address().port)));
}

function freePort() {
  return new Promise((r) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => r(p)); });
  });
}

const nextFrame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));

const pct = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)];
};
const stats = (xs) => ({ n: xs.length, median: pct(xs, 50), p95: pct(xs, 95), max: xs.length ? Math.max(...xs) : null });

async function main() {
  browser = await chromium.launch({
    executablePath: process.env.KILN_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run',
      ...(gl === 'off' ? ['--disable-gpu'] : ['--enable-unsafe-swiftshader', '--use-angle=swiftshader'])],
    timeout: 60000,
  });
  const context = await browser.newContext({ viewport: { width: 1300, height: 800 } });
  context.setDefaultTimeout(left());
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', (d) => { errors.push('dialog: ' + d.message()); d.dismiss().catch(() => {}); });
  await page.addInitScript(() => {
    const kb = window.__kb = { draws: 0, armed: false, t0: 0, done: [] };
    const clear = CanvasRenderingContext2D.prototype.clearRect;
    CanvasRenderingContext2D.prototype.clearRect = function (...a) {
      if (this.canvas && this.canvas.id === 'flame') {
        kb.draws++;
        if (kb.armed) {
          kb.armed = false;
          const t0 = kb.t0, tDraw = performance.now();
          let tDrawn = 0;
          queueMicrotask(() => { tDrawn = performance.now(); });
          requestAnimationFrame(() => setTimeout(() => kb.done.push({ t0, tHash: kb.tHash, tDraw, tDrawn, tPaint: performance.now() }), 0));
        }
      }
      return clear.apply(this, a);
    };
    // The page reacts to a zoom or search through location.hash: when its
    // hashchange arrives is part of the latency.
    window.addEventListener('hashchange', () => { kb.tHash = performance.now(); }, true);
    const arm = () => { kb.t0 = performance.now(); kb.tHash = 0; kb.armed = true; };
    kb.arm = arm;
  });
  // When the flame graph is drawn, in the page's own clock (epoch ms): a
  // requestAnimationFrame loop checks the viewer's sign each frame, and the
  // time is taken after the frame that follows it.  No round trip to this
  // driver is counted.
  const drawnSign = {
    kiln: "document.body && document.body.dataset.ready === '1'",
    pprof: "document.querySelectorAll('#chart svg g').length > 1",
    speedscope: "document.title !== 'speedscope' && !!document.querySelector('canvas')",
  }[viewer];
  await page.addInitScript(`(() => {
    if (location.pathname === '/warm' || location.protocol === 'about:') return;
    const look = () => {
      if (${drawnSign}) requestAnimationFrame(() => setTimeout(() => {
        window.__drawnAt = performance.timeOrigin + performance.now(); }, 0));
      else requestAnimationFrame(look);
    };
    requestAnimationFrame(look);
  })()`);
  await page.goto('about:blank');
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const heap = async () => {
    const { metrics } = await cdp.send('Performance.getMetrics');
    const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
    return { used: m.JSHeapUsedSize, total: m.JSHeapTotalSize };
  };
  const bcdp = await browser.newBrowserCDPSession();
  const rendererPeak = async () => {
    try {
      const { processInfo } = await bcdp.send('SystemInfo.getProcessInfo');
      let renderer = 0, gpu = 0;
      for (const p of processInfo) {
        const v = vm(p.id);
        if (!v) continue;
        if (p.type === 'renderer') renderer = Math.max(renderer, v.hwm);
        if (p.type === 'GPU') gpu = Math.max(gpu, v.hwm);
      }
      return { renderer_hwm_kib: renderer, gpu_hwm_kib: gpu };
    } catch (e) { return { renderer_hwm_kib: null, why: String(e) }; }
  };

  // The renderer process is started and warm before the clock starts (a
  // small page on 127.0.0.1, the same site as every viewer's page), as in a
  // browser already open: the time of that first load is reported apart.
  const staticPort = await startStatic(resolve(process.env.SPEEDSCOPE_DIR ||
      join(browserDir, 'node_modules/speedscope/dist/release')), viewer === 'speedscope' ? resolve(file) : null);
  const tw = performance.now();
  await page.goto(`http://127.0.0.1:${staticPort}/warm`);
  await page.evaluate(nextFrame);
  result.warm_page_s = (performance.now() - tw) / 1000;

  const t0 = performance.now(), t0Epoch = performance.timeOrigin + t0;
  let url;
  if (viewer === 'kiln') {
    const m = await startServer(process.env.KILN, ['serve', '--http', '127.0.0.1:0', file], {},
      /^kiln serve: (http:\/\/\S+)$/m);
    url = m[1];
  } else if (viewer === 'pprof') {
    const port = await freePort();
    const m = await startServer(process.env.PPROF, [`-http=127.0.0.1:${port}`, '-no_browser', file], {},
      /Serving web UI on (http:\/\/\S+)/);
    url = m[1].replace(/\/$/, '') + '/ui/flamegraph';
  } else {
    url = `http://127.0.0.1:${staticPort}/index.html#profileURL=/profile/${encodeURIComponent(basename(file))}`;
  }
  const tListen = performance.now();
  result.t_listen = (tListen - t0) / 1000;
  if (viewer === 'kiln') {
    const m = child.getErr().match(/read \d+ profiles? \((\d+) distinct stacks\) in ([\d.]+) s/);
    if (m) { result.stacks = +m[1]; result.kiln_read_s = +m[2]; }
  }

  // kiln: the page's ready mark (set after the first draw); pprof: the d3
  // flame graph's SVG has its boxes; speedscope: the landing page (or a
  // spinner) until the profile is imported, then the title names the
  // profile and a canvas draws the time-ordered flame chart.
  await page.goto(url, { timeout: left(), waitUntil: 'commit' });
  await page.waitForFunction(() => window.__drawnAt, null, { timeout: left(), polling: 200 });
  const drawnAt = await page.evaluate(() => window.__drawnAt);
  result.t_drawn = (drawnAt - t0Epoch) / 1000;
  if (child) result.server_cpu_s = cpuSeconds(child.pid);
  // When the browser started the navigation (after the driver saw the
  // server ready and asked for the page).
  result.nav_start_s = (await page.evaluate(() => performance.timeOrigin) - t0Epoch) / 1000;
  if (child && child.tRead !== undefined) result.t_read = (child.tRead - t0) / 1000;
  // The page's own load (for pprof: the server generates the flame graph
  // page on this request) and the big fetches (speedscope's profile).
  result.nav = await page.evaluate(() => {
    const n = performance.getEntriesByType('navigation')[0];
    return n ? { wait_ms: n.responseStart - n.requestStart, body_ms: n.responseEnd - n.responseStart,
      bytes: n.encodedBodySize, dom_ms: n.domContentLoadedEventEnd - n.responseEnd } : null;
  });
  result.fetches = await page.evaluate(() => performance.getEntriesByType('resource')
    .filter((r) => r.name.includes('/profile/'))
    .map((r) => ({ name: new URL(r.name).pathname, start: r.startTime, end: r.responseEnd, bytes: r.encodedBodySize })));
  if (viewer === 'kiln') {
    const e = await page.locator('#error').evaluate((x) => (x.hidden ? '' : x.textContent));
    if (e) throw new Error('the page says: ' + e);
  }
  result.title = await page.title();
  if (viewer === 'kiln') {
    const res = await page.evaluate(() => performance.getEntriesByType('resource')
      .filter((r) => r.name.includes('/api/'))
      .map((r) => ({ api: new URL(r.name).pathname, start: r.startTime, ms: r.responseEnd - r.requestStart, bytes: r.transferSize })));
    result.requests = res;
    const nav = await page.evaluate(() => performance.getEntriesByType('navigation')[0].responseEnd);
    result.page_loaded_ms = nav;
    result.nodes = await page.evaluate(() => flame.nodes.length);
  }
  if (viewer === 'pprof') result.nodes = await page.evaluate(() => document.querySelectorAll('#chart svg g').length);
  result.heap_after_draw = await heap();
  let heapMax = result.heap_after_draw.used;

  if (viewer === 'kiln' && interact > 0) {
    result.latency = await interactKiln(page, interact, async () => { heapMax = Math.max(heapMax, (await heap()).used); });
  }
  result.heap_max_used = heapMax;
  Object.assign(result, await rendererPeak());
  if (child) {
    const v = vm(child.pid);
    if (v) { result.server_hwm_kib = v.hwm; result.server_anon_kib = v.anon; result.server_file_kib = v.file; }
  }
  result.errors = errors;
  result.ok = true;
}

// Zoom and search on kiln's page, each timed in the page from the input
// event (a capture-phase listener, before the page's own) to the frame
// after the redraw.
async function interactKiln(page, n, sampleHeap) {
  // Arm on the input events the page reacts to.
  await page.evaluate(() => {
    for (const t of ['click', 'keydown'])
      window.addEventListener(t, (e) => {
        if (window.__kb.listen) window.__kb.arm();
      }, true);
  });
  const take = async (what, act) => {
    const before = await page.evaluate(() => { window.__kb.done = []; window.__kb.listen = true; performance.clearResourceTimings(); return window.__kb.draws; });
    await act();
    await page.waitForFunction(() => window.__kb.done.length > 0, null, { polling: 'raf' });
    const r = await page.evaluate(() => {
      window.__kb.listen = false;
      const d = window.__kb.done[0];
      const req = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/flame')).pop();
      return { ...d, draws: window.__kb.draws,
        req: req ? { start: req.startTime, reqStart: req.requestStart, end: req.responseEnd, bytes: req.transferSize } : null };
    });
    if (r.draws - before !== 1) throw new Error(`${what}: ${r.draws - before} draws, expected 1`);
    return {
      what, ms: r.tPaint - r.t0,
      server_ms: r.req ? r.req.end - r.req.reqStart : null,
      draw_ms: r.tDrawn - r.tDraw,
      hash_ms: r.tHash ? r.tHash - r.t0 : null,
      after_response_ms: r.req ? r.tPaint - r.req.end : null,
      before_request_ms: r.req ? r.req.start - r.t0 : null,
      bytes: r.req ? r.req.bytes : null,
    };
  };
  // Frames within the window only (the threads-over-time strip above the
  // flame graph pushes its deeper rows below the fold).
  const geom = () => page.evaluate(() => {
    const b = document.getElementById('flame').getBoundingClientRect();
    return { left: b.left, top: b.top, bottom: window.innerHeight,
      nodes: flame.nodes.map((_, i) => ({ i, d: flame.nodes[i][1], ...flame.geom(i) })) };
  });
  // Deterministic choice of targets.
  let seed = 12345;
  const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x80000000; };
  const out = { floor: [], zoom_in: [], zoom_out: [], search: [], search_clear: [], search_typed: [] };
  // The browser alone: a click on a small canvas of our own that paints it
  // at once, to the frame after; the same clock as below.  What the machine
  // gives any page now, whatever it draws.
  await page.evaluate(() => {
    const c = document.createElement('canvas');
    c.id = '__kbfloor'; c.width = c.height = 8;
    c.style.cssText = 'position:fixed;right:0;top:0;width:8px;height:8px;z-index:99999';
    let k = 0;
    c.addEventListener('click', (e) => {
      e.stopPropagation();
      const t0 = performance.now();
      const g = c.getContext('2d');
      g.fillStyle = (k++ % 2) ? '#f00' : '#00f'; g.fillRect(0, 0, 8, 8);
      requestAnimationFrame(() => setTimeout(() => window.__kb.floor.push(performance.now() - t0), 0));
    });
    window.__kb.floor = [];
    document.body.append(c);
  });
  for (let k = 0; k < 2 * n; k++) {
    const before = await page.evaluate(() => window.__kb.floor.length);
    await page.mouse.click(1300 - 4, 4);
    await page.waitForFunction((b) => window.__kb.floor.length > b, before, { polling: 'raf' });
  }
  out.floor = (await page.evaluate(() => window.__kb.floor)).map((ms) => ({ what: 'floor', ms }));
  await page.evaluate(() => document.getElementById('__kbfloor').remove());
  for (let k = 0; k < n; k++) {
    const g = await geom();
    const cand = g.nodes.filter((x) => x.i > 0 && x.w >= 30 && x.d >= 1 &&
      g.top + x.y >= 0 && g.top + x.y + 18 <= g.bottom);
    if (!cand.length) break;
    const c = cand[Math.floor(rnd() * cand.length)];
    // Move first (hover is not timed), then click.
    await page.mouse.move(g.left + c.x + c.w / 2, g.top + c.y + 9);
    out.zoom_in.push(await take('zoom in', () => page.mouse.click(g.left + c.x + c.w / 2, g.top + c.y + 9)));
    await page.mouse.move(1, 1);
    out.zoom_out.push(await take('zoom out', () => page.keyboard.press('Escape')));
    await sampleHeap();
  }
  // Searches: names from the top table (escaped: C++ names are full of
  // regex characters), a prefix of one, a case-insensitive word.
  const rows = (await page.evaluate(async () => (await (await fetch('/api/top?n=60')).json()).rows.map((r) => r.name)));
  const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const res = [];
  for (let k = 0; k < n; k++) {
    const name = rows[Math.floor(rnd() * rows.length)];
    const kind = k % 3;
    res.push(kind === 0 ? esc(name) : kind === 1 ? '^' + esc(name.slice(0, 6)) : '(?i)' + esc(name.replace(/[^A-Za-z]+/g, ' ').trim().split(' ').pop().slice(0, 4) || 'a'));
  }
  for (const re of res) {
    await page.focus('#search');
    await page.evaluate((v) => { document.getElementById('search').value = v; }, re);
    out.search.push({ re, ...(await take('search', () => page.keyboard.press('Enter'))) });
    out.search_clear.push(await take('search clear', () => page.keyboard.press('Escape')));
    await sampleHeap();
  }
  // Typed: from the last key to the repaint (the page waits 250 ms).
  for (const re of res.slice(0, Math.min(5, res.length))) {
    await page.focus('#search');
    await page.evaluate(() => { document.getElementById('search').value = ''; });
    const last = re.slice(-1);
    await page.evaluate((v) => { document.getElementById('search').value = v; }, re.slice(0, -1));
    out.search_typed.push(await take('search typed', () => page.keyboard.type(last)));
    await page.evaluate(() => { document.getElementById('search').value = ''; });
    await take('search typed clear', () => page.keyboard.press('Escape'));
  }
  const summary = {};
  for (const [k, v] of Object.entries(out)) {
    summary[k] = { ...stats(v.map((x) => x.ms)), server_median: pct(v.map((x) => x.server_ms).filter((x) => x !== null), 50),
      draw_median: pct(v.map((x) => x.draw_ms), 50),
      hash_median: pct(v.map((x) => x.hash_ms).filter((x) => x !== null), 50),
      before_request_median: pct(v.map((x) => x.before_request_ms).filter((x) => x !== null), 50) };
  }
  summary.zoom = stats([...out.zoom_in, ...out.zoom_out].map((x) => x.ms));
  summary.search_enter = stats([...out.search, ...out.search_clear].map((x) => x.ms));
  summary.samples = out;
  return summary;
}

let rc = 0;
const guard = setTimeout(() => {
  result.why = `timed out after ${timeoutS} s`;
  finish(1);
}, timeoutS * 1000 + 30000);
let finishing = false;
async function finish(code) {
  if (finishing) return;
  finishing = true;
  clearTimeout(guard);
  try { await stopServer(); } catch {}
  if (staticServer) staticServer.close();
  try { if (browser) await browser.close(); } catch {}
  console.log(JSON.stringify(result));
  process.exit(code);
}
// Stopped from outside (serve.sh's timeout): stop the server we started.
for (const sig of ['SIGTERM', 'SIGINT'])
  process.on(sig, () => { result.why = `stopped by ${sig}`; finish(1); });
try {
  await main();
} catch (e) {
  result.why = String(e.message || e).split('\n')[0].slice(0, 300);
  if (/Timeout|timed out/i.test(result.why)) result.why = `did not draw within ${timeoutS} s (${result.why})`;
  rc = 1;
}
await finish(rc);
