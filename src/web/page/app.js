// SPDX-License-Identifier: Apache-2.0
// kiln serve's page: draws what the C server aggregated.  The browser holds
// only the nodes of the current view (those at least a pixel wide); every
// piece of view state lives in location.hash, so a link reproduces it.
'use strict';

const ROW = 18;                 // pixels per frame row
const $ = (id) => document.getElementById(id);

// ---- view state <-> URL ----

const DEFAULTS = { v: 'flame', p: '0', type: '', focus: '', ignore: '', hide: '', root: '',
  s: '', rev: '0', d: '0', sort: 'flat', order: '', filter: '', lines: '0', fn: '',
  t0: '', t1: '', cgn: '80', fit: '1', abs: '', ct: '', lf: '', g: '',
  fx: '', lh: '0', sct: '', sx: '', tf: '', hn: '5', hf: 'alive=end' };
let state = { ...DEFAULTS };
// Views in files of their own (calltree.js, summary.js, stackchart.js, disasm.js, heapviews.js): render(gen), wire().
const VIEWS = { calltree: CallTree, summary: Summary, stackchart: StackChart, disasm: Disasm, heap: HeapViews };

function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  state = { ...DEFAULTS };
  for (const k of Object.keys(DEFAULTS)) if (q.has(k)) state[k] = q.get(k);
}

// Changes state and records it in the URL (one history entry per change),
// drawing at once: pushState fires no hashchange, so no event round trip
// stands between the click and the request.  Back and Forward come as
// popstate; a fragment typed into the address bar as hashchange.
let shownHash = null;           // the fragment the views were drawn for
// replace: no history entry of its own (a zoom's window as it settles).
function setState(changes, replace) {
  const next = { ...state, ...changes };
  // A new zoom root starts with the whole of it in view.
  if ('root' in changes && !('fx' in changes)) next.fx = '';
  const q = new URLSearchParams();
  for (const k of Object.keys(DEFAULTS)) if (next[k] !== DEFAULTS[k]) q.set(k, next[k]);
  const h = '#' + q.toString();
  state = next;
  if (!(h === location.hash || (h === '#' && !location.hash))) {
    try {
      history[replace ? 'replaceState' : 'pushState'](null, '', h === '#' ? location.pathname + location.search : h);
    } catch (e) {
      location.hash = h;        // hashchange draws
      return;
    }
  }
  render();
}
function onNavigate() {
  if (location.hash === shownHash) return;   // drawn already
  readHash();
  render();
}

// A root path: frame names, outermost first, ';' between them; '\;' and
// '\\' inside names (the server's format).
const escName = (n) => n.replace(/\\/g, '\\\\').replace(/;/g, '\\;');
function splitPath(s) {
  const out = []; let cur = ''; 
  if (!s) return out;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && i + 1 < s.length) cur += s[++i];
    else if (s[i] === ';') { out.push(cur); cur = ''; }
    else cur += s[i];
  }
  out.push(cur);
  return out;
}
const joinPath = (names) => names.map(escName).join(';');

// ---- server ----

function sel() {
  const q = new URLSearchParams();
  q.set('p', state.p);
  if (state.type) q.set('type', state.type);
  if (state.focus) q.set('focus', state.focus);
  if (state.ignore) q.set('ignore', state.ignore);
  if (state.hide) q.set('hide', state.hide);
  if (state.t0 && state.t1) { q.set('t0', state.t0); q.set('t1', state.t1); }
  if (state.lf) q.set('labels', state.lf);
  if (state.g) q.set('group', state.g);
  if (state.tf) q.set('tf', state.tf);
  return q;
}

// ---- a saved page: the API answered from the data embedded in it ----
// (kiln_web_save_html; offline.js answers.)
const OFFLINE = Offline.on;

// The server's regular expressions are POSIX EREs (regcomp, REG_EXTENDED,
// the C locale, GNU's escapes); a saved page matches in the browser, so it
// turns an ERE into the JavaScript RegExp that matches the same names:
// bracket expressions (POSIX classes, ']' first, a backslash is itself),
// escapes (\w \s \b \< \> and back-references as GNU reads them, any
// other escaped letter is that letter: \d is "d"), and refuses what regcomp
// refuses that JavaScript would take ("(?" groups).
const POSIX_CLASSES = {
  alpha: 'A-Za-z', digit: '0-9', alnum: '0-9A-Za-z', upper: 'A-Z', lower: 'a-z',
  space: ' \\t\\n\\r\\f\\v', blank: ' \\t', punct: '!-\\/:-@\\[-`{-~', print: ' -~',
  graph: '!-~', cntrl: '\\x00-\\x1f\\x7f', xdigit: '0-9A-Fa-f',
};
function ereToJs(src) {
  let out = '', i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\') {
      const n = src[i + 1];
      if (n === undefined) throw new Error('trailing backslash');
      if ('wWsSbB123456789'.includes(n)) out += '\\' + n;
      else if (n === '<') out += '\\b(?=\\w)';
      else if (n === '>') out += '\\b(?<=\\w)';
      else if (n === '`') out += '^';
      else if (n === "'") out += '$';
      else if (/[0-9A-Za-z]/.test(n)) out += n;
      else out += '\\' + n;
      i += 2;
    } else if (c === '(' && src[i + 1] === '?') {
      throw new Error('Invalid preceding regular expression');
    } else if (c === '[') {
      let j = i + 1, cls = '[';
      if (src[j] === '^') { cls += '^'; j++; }
      if (src[j] === ']') { cls += '\\]'; j++; }
      for (;; j++) {
        if (j >= src.length) throw new Error('Unmatched [, [^, [:, [., or [=');
        const d = src[j];
        if (d === ']') break;
        if (d === '[' && ':.='.includes(src[j + 1])) {
          const k = src.indexOf(src[j + 1] + ']', j + 2);
          if (k < 0) throw new Error('Unmatched [, [^, [:, [., or [=');
          const name = src.slice(j + 2, k);
          if (src[j + 1] === ':') {
            if (!(name in POSIX_CLASSES)) throw new Error('Invalid character class name');
            cls += POSIX_CLASSES[name];
          } else {
            cls += name.replace(/[\\\]\[^-]/g, '\\$&');
          }
          j = k + 1;
        } else {
          cls += d === '\\' || d === '[' ? '\\' + d : d;
        }
      }
      out += cls + ']';
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

// A search regex as the server takes it: POSIX ERE, (?i) in front.
function searchRe(s) {
  try {
    return s.startsWith('(?i)') ? new RegExp(ereToJs(s.slice(4)), 'i') : new RegExp(ereToJs(s));
  } catch (e) { throw new Error(`bad search regular expression '${s}': ${e.message}`); }
}

let generation = 0;             // answers to superseded requests are dropped
// This tab, to the server: a request of a newer generation stops the
// computations of this tab's older ones (docs/kiln-serve.md "Load").
const PAGE_ID = Math.random().toString(36).slice(2, 10) || 'page';

// ---- busy state (issue 22): while requests are out for longer than a
// moment the page says so (body[data-busy], the views dimmed, #busy with
// what the server is doing, from /api/status); a newer render aborts the
// older one's requests, and the server stops a range analysis that a
// newer range replaced. ----
let aborter = new AbortController();
let inflight = 0, busyTimer = 0, statusTimer = 0;
function newGeneration() {
  aborter.abort();
  aborter = new AbortController();
}
async function pollStatus() {
  statusTimer = 0;
  if (!inflight) return;
  try {
    const st = await (await fetch('/api/status')).json();
    const pc = (d, t) => (t ? ` ${Math.floor(100 * d / t)}%` : '');
    const j = st.jobs && st.jobs[0];
    $('busy').textContent = j ? `analysing ${j.name.replace(/^.*\//, '')}: ${j.what}${pc(j.done, j.total)}` :
      st.loading ? `${st.loading}${pc(st.load_done, st.load_total)} (${st.loaded} of ${st.inputs} read)` : 'working…';
  } catch (e) { /* the next poll tries again */ }
  if (inflight && !statusTimer) statusTimer = setTimeout(pollStatus, 300);
}
function busy(delta) {
  inflight += delta;
  if (inflight && !busyTimer && !document.body.dataset.busy) {
    busyTimer = setTimeout(() => {
      busyTimer = 0;
      if (!inflight) return;
      document.body.dataset.busy = '1';
      $('busy').textContent = 'working…';
      $('busy').hidden = false;
      if (!statusTimer) pollStatus();
    }, 150);
  }
  if (!inflight) {
    clearTimeout(busyTimer); busyTimer = 0;
    delete document.body.dataset.busy;
    $('busy').hidden = true;
  }
}
async function busyFetch(url) {
  busy(1);
  try { return await fetch(url, { signal: aborter.signal }); } finally { busy(-1); }
}

async function api(path, q) {
  if (OFFLINE) return Offline.api(path, q);
  const r = await busyFetch(`/api/${path}?${q.toString()}&page=${PAGE_ID}&seq=${generation}`);
  let body;
  try { body = await r.json(); } catch (e) { body = { error: `bad answer from the server (${r.status})` }; }
  if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
  return body;
}

function showError(msg) {
  const e = $('error');
  e.textContent = msg || '';
  e.hidden = !msg;
}

// ---- drawing ----

// The frame's colour as the server sends it (n[10], 0xRRGGBB: the one
// palette of render/flame.h, the same as kiln flame's SVG; with diff=1
// the change's red or blue, scaled as kiln flame scales it); a search
// match is magenta.
function colour(rgb, match) {
  if (match) return 'rgb(230,0,230)';
  return `rgb(${rgb >>> 16},${(rgb >>> 8) & 255},${rgb & 255})`;
}

function fmtValue(v, unit) {
  const a = Math.abs(v);
  const sc = (x, s) => (Math.abs(x) >= 100 || Number.isInteger(x) ? x.toFixed(0) :
    Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2)) + s;
  if (unit === 'nanoseconds') {
    if (a >= 1e9) return sc(v / 1e9, 's');
    if (a >= 1e6) return sc(v / 1e6, 'ms');
    if (a >= 1e3) return sc(v / 1e3, 'us');
    return v + 'ns';
  }
  if (unit === 'bytes') {
    if (a >= 1073741824) return sc(v / 1073741824, 'GB');
    if (a >= 1048576) return sc(v / 1048576, 'MB');
    if (a >= 1024) return sc(v / 1024, 'kB');
    return v + 'B';
  }
  return unit === 'count' ? `${v} samples` : `${v} ${unit}`;
}
function change(v, b, unit) {
  const d = v - b;
  if (Math.abs(d) < 0.5) return 'unchanged';
  const rel = b > 0 ? ` (${d > 0 ? '+' : ''}${(100 * d / b).toFixed(2)}%)` : ' (new)';
  return `${d > 0 ? 'grew' : 'shrank'} ${d > 0 ? '+' : '-'}${fmtValue(Math.abs(Math.round(d)), unit)}${rel}`;
}
const pct = (v, t) => (t > 0 ? (100 * v / t).toFixed(2) : '0.00') + '%';

// A graph on a canvas: nodes from the server ([name, depth, x, total, self,
// kind, module, file, line, match, rgb(, base)]), `up` draws depth 0 at the bottom.
class Graph {
  constructor(canvas, onClick, onHover) {
    this.c = canvas; this.onClick = onClick; this.onHover = onHover;
    this.nodes = []; this.sel = -1;
    canvas.addEventListener('mousemove', (e) => this.hover(e));
    canvas.addEventListener('mouseleave', () => { this.hot = -1; this.onHover(null); });
    canvas.addEventListener('click', (e) => {
      const i = this.at(e); if (i >= 0) this.onClick(i);
    });
  }

  set(data, tree, up, total) {
    this.diff = !!(tree.nodes.length && tree.nodes[0].length > 11);
    this.absolute = !!data.absolute; // the base's values as they are, not scaled
    this.names = data.names; this.nodes = tree.nodes; this.up = up; this.total = total;
    this.depth = tree.depth; this.rootTotal = tree.nodes.length ? tree.nodes[0][3] : 0;
    this.unit = data.unit;
    // Parents from the depth-first order, for paths.
    const stack = []; this.parent = new Int32Array(this.nodes.length);
    this.nodes.forEach((n, i) => {
      stack.length = n[1]; this.parent[i] = n[1] ? stack[n[1] - 1] : -1; stack.push(i);
    });
    if (this.sel >= this.nodes.length) this.sel = -1;
    this.draw();
  }

  name(i) { const k = this.nodes[i][0]; return k < 0 ? 'all' : this.names[k]; }
  path(i) { const p = []; for (; i >= 0; i = this.parent[i]) p.unshift(this.name(i)); return p; }

  // this.win: the horizontal window [a, b] of the root shown (zoom.js).
  geom(i) {
    const n = this.nodes[i], [a, b] = this.win || [0, 1], W = this.width;
    const s = this.rootTotal ? W / this.rootTotal / (b - a) : 0;
    const y = this.up ? (this.depth - n[1]) * ROW : n[1] * ROW;
    return { x: n[2] * s - a * W / (b - a), y, w: n[3] * s };
  }

  draw() {
    const c = this.c, dpr = window.devicePixelRatio || 1;
    this.width = c.parentElement.clientWidth;
    const h = (this.depth + 1) * ROW + 1;
    c.style.height = h + 'px';
    c.width = Math.round(this.width * dpr); c.height = Math.round(h * dpr);
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, this.width, h);
    g.font = '12px ui-monospace, monospace';
    g.textBaseline = 'middle';
    for (let i = 0; i < this.nodes.length; i++) {
      const n = this.nodes[i], r = this.geom(i), name = this.name(i);
      if (r.x + r.w < 0 || r.x > this.width) continue;
      if (r.x < 0) { r.w += r.x; r.x = 0; }
      if (r.x + r.w > this.width) r.w = this.width - r.x;
      g.fillStyle = i === 0 && n[0] < 0 ? 'rgb(200,200,200)' :
        colour(n[10], n[9]);
      g.fillRect(r.x, r.y + 1, Math.max(r.w - 0.5, 0.5), ROW - 1);
      if (r.w > 28) {
        g.fillStyle = '#000';
        const room = Math.floor((r.w - 6) / 7.2);
        const label = name.length <= room ? name : name.slice(0, Math.max(room - 2, 0)) + '..';
        if (room > 2) g.fillText(label, r.x + 3, r.y + ROW / 2 + 1, r.w - 6);
      }
      if (i === this.sel) {
        g.strokeStyle = '#000'; g.lineWidth = 2;
        g.strokeRect(r.x + 1, r.y + 2, Math.max(r.w - 2, 1), ROW - 3);
      }
    }
  }

  at(e) {
    const b = this.c.getBoundingClientRect(), x = e.clientX - b.left, y = e.clientY - b.top;
    for (let i = this.nodes.length - 1; i >= 0; i--) {
      const r = this.geom(i);
      if (x >= r.x && x < r.x + Math.max(r.w, 1) && y >= r.y && y < r.y + ROW) return i;
    }
    return -1;
  }

  hover(e) {
    const i = this.at(e);
    this.hot = i;
    this.onHover(i >= 0 ? i : null, e);
  }

  // Text about node i: name, value and share of the whole profile.
  describe(i) {
    const n = this.nodes[i];
    const mod = n[6] >= 0 ? this.names[n[6]] : '';
    const file = n[7] >= 0 ? this.names[n[7]] + (n[8] ? ':' + n[8] : '') : '';
    return { head: `${this.name(i)} (${fmtValue(n[3], this.unit)}, ${pct(n[3], this.total)})`,
      change: this.diff ? change(n[3], n[11], this.unit) : '',
      more: [this.diff && `base ${fmtValue(n[11], this.unit)}${this.absolute ? '' : ' (scaled to this total)'}: ${change(n[3], n[11], this.unit)}`,`self ${fmtValue(n[4], this.unit)} (${pct(n[4], this.total)})`,
        mod && `module ${mod.replace(/^.*\//, '')}`, file && `at ${file}`].filter(Boolean) };
  }

  // Keyboard: neighbours at the same depth, parent, first child.
  move(dir) {
    if (!this.nodes.length) return;
    let i = this.sel < 0 ? 0 : this.sel;
    const n = this.nodes[i];
    if (dir === 'parent') { if (this.parent[i] >= 0) i = this.parent[i]; }
    else if (dir === 'child') {
      if (i + 1 < this.nodes.length && this.nodes[i + 1][1] === n[1] + 1) i = i + 1;
    } else {
      const same = [];
      this.nodes.forEach((m, k) => { if (m[1] === n[1]) same.push(k); });
      same.sort((a, b) => this.nodes[a][2] - this.nodes[b][2]);
      const at = same.indexOf(i) + (dir === 'next' ? 1 : -1);
      if (at >= 0 && at < same.length) i = same[at];
    }
    this.sel = i;
    this.draw();
  }
}

// ---- tooltip ----

function tip(g, i, e, details) {
  const t = $('tip');
  if (i === null || i === undefined) { t.hidden = true; details.textContent = ''; return; }
  const d = g.describe(i);
  details.textContent = `Function: ${d.head}` + (d.change ? `, ${d.change}` : '');
  t.textContent = [d.head, ...d.more].join('\n');
  t.hidden = false;
  const x = Math.min(e.clientX + 12, window.innerWidth - t.offsetWidth - 4);
  const y = e.clientY + 16 + t.offsetHeight > window.innerHeight ? e.clientY - t.offsetHeight - 8 : e.clientY + 16;
  t.style.left = x + 'px'; t.style.top = y + 'px';
}

// ---- threads over time ----
// One strip per thread (the busiest TL_THREADS), darker where it had more
// samples, under a bar chart of every thread together.  Dragging picks a
// time range (t0, t1 in the URL) that the server applies to every view.

const TL_LABEL = 170, TL_ALL = 26, TL_ROW = 13, TL_AXIS = 14, TL_THREADS = 16;
let tlData = null, tlKey = '', tlDrag = null, tlWidth = 0, tlDrawn = '';

const fmtSec = (ns, span) => (ns / 1e9).toFixed(span >= 100e9 ? 1 : span >= 10e9 ? 2 : 3) + ' s';

async function renderTimeline(gen) {
  const prof = profiles[+state.p];
  if (OFFLINE || !prof || !prof.times) { $('timeline-view').hidden = true; tlData = null; return; }
  $('timeline-view').hidden = false;
  const width = Math.max(TL_LABEL + 10, $('tl-wrap').clientWidth);
  const q = sel(); q.delete('t0'); q.delete('t1');
  q.set('buckets', String(Math.min(2000, width - TL_LABEL)));
  q.set('threads', String(TL_THREADS));
  if (q.toString() !== tlKey || !tlData) {
    const d = await api('timeline', q);
    if (gen !== generation) return;
    tlData = d; tlKey = q.toString();
  }
  // Redrawn only when what it shows changed (a zoom or a search does not).
  const drawn = `${tlKey}|${state.t0}|${state.t1}|${$('tl-wrap').clientWidth}`;
  if (drawn !== tlDrawn) { tlDrawn = drawn; drawTimeline(); }
}

// Pixels <-> nanoseconds on the strips.
const tlX = (t) => TL_LABEL + (tlData.end ? t / tlData.end * (tlWidth - TL_LABEL) : 0);
const tlT = (x) => Math.min(Math.max((x - TL_LABEL) / (tlWidth - TL_LABEL), 0), 1) * tlData.end;

function tlRange() {
  if (tlDrag && tlDrag.x1 !== undefined) {
    const a = tlT(Math.min(tlDrag.x0, tlDrag.x1)), b = tlT(Math.max(tlDrag.x0, tlDrag.x1));
    const B = tlData.bucket_ns;
    return [Math.floor(a / B) * B, Math.max(Math.ceil(b / B), Math.floor(a / B) + 1) * B];
  }
  return state.t0 && state.t1 ? [+state.t0, +state.t1] : null;
}

// Height of the top chart: every thread's bars, or a heap trace's size.
const tlTop = () => (tlData && tlData.heap ? 90 : TL_ALL);

function drawTimeline() {
  const d = tlData, c = $('timeline'), dpr = window.devicePixelRatio || 1;
  tlWidth = c.parentElement.clientWidth;
  const top = tlTop();
  $('tl-title').textContent = d.heap ? 'memory over time' : 'threads over time';
  const h = top + d.threads.length * TL_ROW + TL_AXIS + 2;
  c.style.height = h + 'px';
  c.width = Math.round(tlWidth * dpr); c.height = Math.round(h * dpr);
  const g = c.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, tlWidth, h);
  g.font = '11px ui-monospace, monospace'; g.textBaseline = 'middle';
  const bw = (tlWidth - TL_LABEL) / Math.max(d.buckets, 1);
  const maxAll = Math.max(1, ...d.total);
  g.fillStyle = '#444'; g.fillText(d.heap ? 'heap size' : 'all threads', 4, top / 2);
  if (d.heap) g.fillText(`peak ${fmtValue(d.heap.peak, 'bytes')}`, 4, top / 2 + 14);
  g.fillStyle = d.heap ? 'rgba(179,70,27,0.55)' : 'rgb(179,70,27)';
  d.total.forEach((v, i) => {
    const bh = v / maxAll * (top - 4);
    if (v > 0) g.fillRect(TL_LABEL + i * bw, top - 2 - bh, Math.max(bw, 1) + 0.5, Math.max(bh, 1));
  });
  if (d.heap) {
    // The size at each bucket's end as a line over the largest sizes.
    g.strokeStyle = 'rgb(120,40,10)'; g.lineWidth = 1.5; g.beginPath();
    d.heap.end.forEach((v, i) => {
      const y = top - 2 - v / maxAll * (top - 4);
      if (i) g.lineTo(TL_LABEL + i * bw, y); else g.moveTo(TL_LABEL, y);
      g.lineTo(TL_LABEL + (i + 1) * bw, y);
    });
    g.stroke();
    const px = tlX(d.heap.peak_t);
    g.fillStyle = '#000'; g.fillRect(px, 2, 1, top - 4);
  }
  let maxT = 1;
  for (const t of d.threads) for (const v of t.values) if (v > maxT) maxT = v;
  d.threads.forEach((t, r) => {
    const y = top + r * TL_ROW;
    g.fillStyle = r % 2 ? '#f3f1ec' : '#fff'; g.fillRect(0, y, tlWidth, TL_ROW);
    g.fillStyle = '#444';
    const label = `${t.name || '?'} ${t.tid >= 0 ? t.tid : ''}`;
    g.fillText(label.length > 24 ? label.slice(0, 23) + '..' : label, 4, y + TL_ROW / 2, TL_LABEL - 8);
    t.values.forEach((v, i) => {
      if (v <= 0) return;
      g.fillStyle = `rgba(179,70,27,${(0.15 + 0.85 * v / maxT).toFixed(3)})`;
      g.fillRect(TL_LABEL + i * bw, y + 1, Math.max(bw, 1), TL_ROW - 2);
    });
  });
  // Time axis: about one tick per 100 px, at round seconds.
  const y = h - TL_AXIS;
  g.fillStyle = '#777'; g.fillRect(TL_LABEL, y, tlWidth - TL_LABEL, 1);
  const raw = d.end / Math.max(1, (tlWidth - TL_LABEL) / 100);
  const p10 = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  const step = [1, 2, 5, 10].map((k) => k * p10).find((s) => s >= raw) || p10 * 10;
  for (let t = 0; t <= d.end; t += step) {
    const x = tlX(t);
    g.fillRect(x, y, 1, 4);
    g.fillText(fmtSec(t, d.end), Math.min(x + 2, tlWidth - 50), y + 8);
  }
  const r = tlRange();
  if (r) {
    g.fillStyle = 'rgba(0,0,0,0.18)';
    g.fillRect(TL_LABEL, 0, tlX(r[0]) - TL_LABEL, y);
    g.fillRect(tlX(r[1]), 0, tlWidth - tlX(r[1]), y);
    g.strokeStyle = '#000'; g.lineWidth = 1;
    g.strokeRect(tlX(r[0]) + 0.5, 0.5, tlX(r[1]) - tlX(r[0]) - 1, y - 1);
  }
  let inRange = 0;
  if (r) d.total.forEach((v, i) => { if (i * d.bucket_ns >= r[0] && i * d.bucket_ns < r[1]) inRange += v; });
  const all = d.total.reduce((a, b) => a + b, 0);
  $('tl-range').textContent = !r ? '' : `${fmtSec(r[0], d.end)} – ${fmtSec(r[1], d.end)} (${fmtSec(r[1] - r[0], d.end)})` +
    (d.heap ? ': allocated in it, its peak, and what it allocated that is still live at its end' : `: ${pct(inRange, all)} of the samples`);
  $('tl-clear').hidden = !r;
  $('tl-summary').textContent = d.heap ? `heap peak ${fmtValue(d.heap.peak, 'bytes')} at ${fmtSec(d.heap.peak_t, d.end)} · ${fmtSec(d.heap.span, d.end)}` :
    `${d.nthreads} thread${d.nthreads === 1 ? '' : 's'}` +
    (d.nthreads > d.threads.length ? ` (the ${d.threads.length} busiest shown)` : '') +
    ` · ${fmtSec(d.end, d.end)}` + (d.untimed ? ` · ${fmtValue(d.untimed, d.unit)} without a time` : '');
}

function wireTimeline() {
  const c = $('timeline');
  const x = (e) => e.clientX - c.getBoundingClientRect().left;
  c.addEventListener('mousedown', (e) => {
    if (!tlData || x(e) < TL_LABEL) return;
    tlDrag = { x0: x(e) }; e.preventDefault();
  });
  window.addEventListener('mousemove', (e) => {
    if (!tlDrag) return;
    tlDrag.x1 = x(e); drawTimeline();
  });
  window.addEventListener('mouseup', () => {
    if (!tlDrag) return;
    const moved = tlDrag.x1 !== undefined && Math.abs(tlDrag.x1 - tlDrag.x0) >= 3;
    const r = moved ? tlRange() : null;
    tlDrag = null;
    if (r) setState({ t0: String(r[0]), t1: String(r[1]) });
    else drawTimeline();
  });
  c.addEventListener('dblclick', () => setState({ t0: '', t1: '' }));
  $('tl-clear').addEventListener('click', () => setState({ t0: '', t1: '' }));
  c.addEventListener('mousemove', (e) => {
    const t = $('tip');
    if (!tlData || tlDrag || x(e) < TL_LABEL) { t.hidden = true; return; }
    const y = e.clientY - c.getBoundingClientRect().top;
    const i = Math.min(Math.floor((x(e) - TL_LABEL) / (tlWidth - TL_LABEL) * tlData.buckets), tlData.buckets - 1);
    const top = tlTop(), row = Math.floor((y - top) / TL_ROW);
    const th = y >= top ? tlData.threads[row] : null;
    if (y >= top && !th) { t.hidden = true; return; }
    const v = th ? th.values[i] : tlData.total[i];
    const at = `${fmtSec(i * tlData.bucket_ns, tlData.end)} – ${fmtSec((i + 1) * tlData.bucket_ns, tlData.end)}`;
    t.textContent = tlData.heap ? `heap size ${at}\nlargest ${fmtValue(v, 'bytes')}, at the end ${fmtValue(tlData.heap.end[i], 'bytes')}` :
      `${th ? `${th.name || '?'} (tid ${th.tid}, pid ${th.pid})` : 'all threads'}\n${at}: ${fmtValue(v, tlData.unit)}` +
      (th ? `\nthread total ${fmtValue(th.total, tlData.unit)}` : '');
    t.hidden = false;
    t.style.left = Math.min(e.clientX + 12, window.innerWidth - t.offsetWidth - 4) + 'px';
    t.style.top = (e.clientY + 16) + 'px';
  });
  c.addEventListener('mouseleave', () => { $('tip').hidden = true; });
}

// ---- the views ----

let profiles = [];
let flame, callers, callees, flameData;

function header() {
  for (const a of document.querySelectorAll('#tabs a')) {
    a.classList.toggle('on', a.dataset.view === state.v);
    const q = new URLSearchParams(location.hash.slice(1)); q.set('v', a.dataset.view);
    a.href = '#' + q.toString();
  }
  const ps = $('profile');
  ps.replaceChildren(...profiles.map((p, i) => new Option(`${p.name} (${p.format})`, String(i))));
  ps.value = state.p;
  const prof = profiles[+state.p] || profiles[0];
  $('tab-heap').hidden = !prof || prof.format !== 'heap-trace' || (!!OFFLINE && !Offline.has('heap'));
  const ts = $('type');
  if (prof) {
    ts.replaceChildren(...prof.types.map((t, i) =>
      new Option(`${t.type} (${t.unit}, ${t.total_str})`, t.type)));
    ts.value = state.type || prof.types[prof.default_type].type;
  }
  for (const a of document.querySelectorAll('#downloads a')) {
    const q = sel(); q.set('format', a.dataset.format);
    if (state.rev === '1') q.set('reverse', '1');
    a.href = `/api/download?${q.toString()}`;
  }
  for (const k of ['focus', 'ignore', 'hide']) if (document.activeElement !== $(k)) $(k).value = state[k];
  for (const v of ['flame', 'top', 'sandwich', 'callgraph', 'source', ...Object.keys(VIEWS)])
    $(`${v}-view`).hidden = !(state.v === v || (v === 'flame' && state.v === 'icicle'));
}

async function renderFlame(gen) {
  const q = sel();
  q.set('width', String(Math.max(1, $('flame-wrap').clientWidth)));
  if (state.root) q.set('root', state.root);
  if (state.s) q.set('search', state.s);
  if (state.rev === '1') q.set('reverse', '1');
  if (state.d === '1') q.set('diff', '1');
  // abs '' leaves it to the server, as in the top table.
  if (state.d === '1' && state.abs !== '') q.set('absolute', state.abs);
  if (!OFFLINE) FlameNav.params(q);
  if (document.activeElement !== $('search')) $('search').value = state.s;
  $('reverse').checked = state.rev === '1';
  $('heavy').checked = state.lh === '1';
  $('diff').checked = state.d === '1';
  const d = await api('flame', q);
  if (gen !== generation) return;
  flameData = d;
  flame.win = OFFLINE ? [0, 1] : Zoom.parse(state.fx);
  flame.set(d, d, state.v === 'flame', d.total);
  await FlameNav.drawn(gen);
  if (gen !== generation) return;
  // Nothing to draw: say why rather than show a blank canvas and "0ns".
  const empty = $('flame-empty');
  empty.hidden = !!d.total;
  if (!d.total)
    empty.textContent = state.focus || state.ignore || state.hide || state.tf || (state.t0 && state.t1) ?
      'No samples in this selection: the focus, ignore, hide or time range leaves none. Clear them to see the whole profile.' :
      'No samples in this profile: the program did not run on a CPU while it was profiled (an idle server, a program waiting on I/O or locks), or the profile was too short for one sample. A wall-clock profile (KILN_CPU_MODE=wall, kiln record --wall) shows where it waited.';
  // A flame graph's roots are its bottom row: when the graph is taller
  // than the window, show them (and what is just above) rather than the
  // empty top of the deepest stacks.
  if (state.v === 'flame') {
    const r = $('flame').getBoundingClientRect();
    if (r.bottom > window.innerHeight) window.scrollBy(0, r.bottom - window.innerHeight + 8);
  }
  // Breadcrumbs: all > main > ... > the zoom root.
  const crumbs = [['all', '']];
  d.path.forEach((p, i) => crumbs.push([p.name, joinPath(d.path.slice(0, i + 1).map((x) => x.name))]));
  const nav = $('crumbs'); nav.replaceChildren();
  crumbs.forEach(([name, root], i) => {
    if (i) { const s = document.createElement('span'); s.className = 'sep'; s.textContent = '›'; nav.append(s); }
    const a = document.createElement('a'); a.textContent = name; a.dataset.root = root;
    a.addEventListener('click', () => setState({ root }));
    nav.append(a);
  });
  $('matched').textContent = state.s ?
    `Matched: ${pct(d.matched, d.total)}` + (state.root ? ` (${pct(d.matched_root, d.nodes.length ? d.nodes[0][3] : 0)} of the zoom)` : '') : '';
}

async function renderTop(gen) {
  const q = sel();
  q.set('n', '500');
  if (state.sort !== 'flat') q.set('sort', state.sort);
  if (state.order) q.set('order', state.order);
  if (state.filter) q.set('filter', state.filter);
  if (state.lines === '1') q.set('lines', '1');
  const diff = state.d === '1' && !!base;
  if (diff) q.set('diff', '1');
  // abs '' leaves it to the server: heap sizes and counts subtracted, times as shares.
  if (diff && state.abs !== '') q.set('absolute', state.abs);
  if (!diff && state.sort === 'delta') q.delete('sort');
  if (document.activeElement !== $('top-filter')) $('top-filter').value = state.filter;
  $('top-lines').checked = state.lines === '1';
  $('top-diff').checked = diff;
  $('top-abs').checked = state.abs === '1';
  $('top-abs-label').hidden = !diff;
  const d = await api('top', q);
  if (gen !== generation) return;
  if (diff) $('top-abs').checked = !!d.absolute;
  $('top-table').classList.toggle('diff', diff);
  for (const th of document.querySelectorAll('#top-table th[data-sort]')) {
    th.classList.toggle('sorted', th.dataset.sort === state.sort);
    const asc = state.order ? state.order === 'asc' : th.dataset.sort === 'name';
    th.classList.toggle('asc', asc);
  }
  const body = document.querySelector('#top-table tbody');
  body.replaceChildren(...d.rows.map((r) => {
    const tr = document.createElement('tr');
    const dir = (x) => (x > 0 ? 'num grew' : x < 0 ? 'num shrank' : 'num');
    const cells = [[r.flat_str, 'num'], [r.flat_pct, 'num'], [r.sum_pct, 'num'],
      [r.cum_str, 'num'], [r.cum_pct, 'num']];
    if (diff) cells.push([r.base_flat_str, 'num'], [(r.delta > 0 ? '+' : '') + r.delta_str, dir(r.delta)],
      [r.delta_pct, dir(r.delta)], [r.delta_cum_pct, dir(r.delta_cum)]);
    for (const [v, cls] of cells) {
      const td = document.createElement('td'); td.className = cls; td.textContent = v; tr.append(td);
    }
    const td = document.createElement('td'); td.className = 'name';
    const a = document.createElement('a'); a.textContent = r.name + (r.file ? ` ${r.file}:${r.line}` : '');
    a.title = 'callers and callees of ' + r.name;
    a.addEventListener('click', () => setState({ v: 'sandwich', fn: r.name }));
    td.append(a); tr.append(td);
    return tr;
  }));
  $('top-summary').textContent = `${d.rows.length} of ${d.count} rows · total ${d.total_str}` +
    (diff ? ` · base ${d.base_total_str}${d.absolute ? '' : ' (scaled to this total)'}` : '');
}

async function renderSandwich(gen) {
  if (document.activeElement !== $('sw-fn')) $('sw-fn').value = state.fn;
  if (!state.fn) {
    callers.set({ names: [], unit: '' }, { nodes: [], depth: 0 }, true, 0);
    callees.set({ names: [], unit: '' }, { nodes: [], depth: 0 }, false, 0);
    $('sw-summary').textContent = 'name a function, or click one in the top table';
    return;
  }
  const q = sel();
  q.set('fn', state.fn);
  q.set('width', String(Math.max(1, $('sw-callers').parentElement.clientWidth)));
  const d = await api('sandwich', q);
  if (gen !== generation) return;
  callers.set(d, d.callers, true, d.total);
  callees.set(d, d.callees, false, d.total);
  $('sw-summary').textContent = `${state.fn}: cum ${fmtValue(d.cum, d.unit)} (${pct(d.cum, d.total)}), self ${fmtValue(d.self, d.unit)} (${pct(d.self, d.total)})`;
}

// Source: the function's cost per line, with the file's text when the
// server could read it.
async function renderSource(gen) {
  if (document.activeElement !== $('src-fn')) $('src-fn').value = state.fn;
  const box = $('src');
  if (!state.fn) {
    box.replaceChildren();
    $('src-summary').textContent = 'name a function, or open one from the sandwich';
    return;
  }
  const q = sel();
  q.set('fn', state.fn);
  const d = await api('source', q);
  if (gen !== generation) return;
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const parts = [];
  let max = 1;
  for (const f of d.files) for (const l of f.lines) if (l.flat > max) max = l.flat;
  for (const f of d.files) {
    const h = el('h3', '', f.file);
    h.append(el('small', '', `flat ${fmtValue(f.flat, d.unit)} (${pct(f.flat, d.total)})` +
      (f.text ? '' : ` · no source text: ${f.why}`)));
    parts.push(h);
    const t = el('table', 'src');
    const head = el('tr');
    for (const [x, c] of [['line', 'num'], ['flat', 'num'], ['cum', 'num'], [f.text ? 'source' : '', '']])
      head.append(el('th', c, x));
    t.append(el('thead')); t.tHead.append(head);
    const body = el('tbody');
    let prev = null;
    for (const l of f.lines) {
      if (prev !== null && l.line > prev + 1) {
        const g = el('tr', 'gap'); g.append(el('td', 'num', '⋮'), el('td'), el('td'), el('td')); body.append(g);
      }
      prev = l.line;
      const tr = el('tr');
      if (l.flat > 0) tr.style.background = `rgba(179,70,27,${(0.08 + 0.4 * l.flat / max).toFixed(3)})`;
      tr.append(el('td', 'num ln', l.line ? String(l.line) : '?'),
        el('td', 'num', l.flat_str || ''), el('td', 'num', l.cum_str || ''),
        el('td', 'text', l.text === undefined ? '' : l.text));
      body.append(tr);
    }
    t.append(body);
    parts.push(t);
  }
  box.replaceChildren(...parts);
  $('src-summary').textContent = `${d.fn}: flat ${d.flat_str} (${pct(d.flat, d.total)}), cum ${d.cum_str} (${pct(d.cum, d.total)})`;
}

// The call graph: SVG from the server (graphviz), shown inline.  Each
// function's box links to kiln-fn:NAME, which opens its sandwich here.
async function renderCallgraph(gen) {
  const q = sel();
  if (state.cgn !== DEFAULTS.cgn) q.set('nodes', state.cgn);
  if (state.lines === '1') q.set('lines', '1');
  if (state.d === '1') q.set('diff', '1');
  if (document.activeElement !== $('cg-nodes')) $('cg-nodes').value = state.cgn;
  $('cg-lines').checked = state.lines === '1';
  $('cg-diff').checked = state.d === '1';
  $('cg-fit').checked = state.fit === '1';
  let text;
  if (OFFLINE) {
    text = Offline.api('callgraph', q);
  } else {
    const r = await busyFetch(`/api/callgraph?${q.toString()}`);
    if (!r.ok) {
      let body = {};
      try { body = await r.json(); } catch (e) { /* not JSON */ }
      throw new Error(body.error || `HTTP ${r.status}`);
    }
    text = await r.text();
  }
  if (gen !== generation) return;
  const parsed = new DOMParser().parseFromString(text, 'image/svg+xml').documentElement;
  if (parsed.nodeName !== 'svg') throw new Error('the server sent a call graph that is not SVG');
  const svg = document.importNode(parsed, true);
  for (const x of svg.querySelectorAll('script, foreignObject')) x.remove();
  let nodes = 0;
  for (const a of svg.querySelectorAll('a')) {
    const h = a.getAttribute('xlink:href') || a.getAttribute('href') || '';
    a.removeAttribute('xlink:href'); a.removeAttribute('href');
    if (!h.startsWith('kiln-fn:')) continue;
    const fn = decodeURIComponent(h.slice(8));
    a.dataset.fn = fn; nodes++;
    // Its menu (focus, ignore, hide, show from, sandwich): cgnav.js.
    // The hover text: the box's tooltip, not graphviz's node id.
    const t = a.closest('g.node') && a.closest('g.node').querySelector('title');
    if (t && a.getAttribute('xlink:title')) t.textContent = a.getAttribute('xlink:title');
  }
  $('cg').replaceChildren(svg);
  CgNav.attach(svg, state.fit === '1');
  $('cg-summary').textContent = `${nodes} function${nodes === 1 ? '' : 's'} shown`;
}

async function render() {
  newGeneration();
  const gen = ++generation;
  shownHash = location.hash;
  header();
  Transforms.render();
  try {
    // The view's request goes out first; the strip is drawn meanwhile.
    const view = VIEWS[state.v] ? VIEWS[state.v].render(gen) : state.v === 'top' ? renderTop(gen) : state.v === 'sandwich' ? renderSandwich(gen) :
      state.v === 'callgraph' ? renderCallgraph(gen) : state.v === 'source' ? renderSource(gen) : renderFlame(gen);
    await Promise.all([view, renderTimeline(gen), Labels.render(gen)]);
    if (gen === generation) showError('');
  } catch (e) {
    if (gen === generation) showError(e.message);
  }
}

// ---- wiring ----

function debounce(fn, ms) {
  let t; return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}

function wire() {
  flame = new Graph($('flame'), (i) => {
    // The zoom root itself (drawn first) zooms out one level.
    if (i === 0) { const p = splitPath(state.root); p.pop(); setState({ root: joinPath(p) }); return; }
    setState({ root: joinPath([...splitPath(state.root), ...flame.path(i).slice(1)]) });
  }, (i, e) => tip(flame, i, e, $('details')));
  const swClick = (g) => (i) => setState({ fn: g.name(i) });
  callers = new Graph($('sw-callers'), swClick(() => callers), (i, e) => tip(callers, i, e, $('sw-details')));
  callees = new Graph($('sw-callees'), swClick(() => callees), (i, e) => tip(callees, i, e, $('sw-details')));
  callers.onClick = (i) => setState({ fn: callers.name(i) });
  callees.onClick = (i) => setState({ fn: callees.name(i) });

  wireTimeline();
  FlameNav.wire(flame);
  CgNav.wire();
  for (const v of Object.values(VIEWS)) v.wire();
  Labels.wire();
  Transforms.wire();
  $('profile').addEventListener('change', (e) => setState({ p: e.target.value, type: '', root: '', t0: '', t1: '', lf: '', g: '' }));
  $('type').addEventListener('change', (e) => setState({ type: e.target.value, root: '' }));
  for (const k of ['focus', 'ignore', 'hide'])
    $(k).addEventListener('change', (e) => setState({ [k]: e.target.value, root: '' }));
  const search = debounce(() => setState({ s: $('search').value }), 250);
  $('search').addEventListener('input', search);
  $('search').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') setState({ s: $('search').value });
    if (e.key === 'Escape') { $('search').value = ''; setState({ s: '' }); $('flame').focus(); }
  });
  $('reverse').addEventListener('change', (e) => setState({ rev: e.target.checked ? '1' : '0', root: '' }));
  $('diff').addEventListener('change', (e) => setState({ d: e.target.checked ? '1' : '0' }));
  $('top-filter').addEventListener('input', debounce(() => setState({ filter: $('top-filter').value }), 250));
  $('top-lines').addEventListener('change', (e) => setState({ lines: e.target.checked ? '1' : '0' }));
  $('top-diff').addEventListener('change', (e) => setState({ d: e.target.checked ? '1' : '0' }));
  $('top-abs').addEventListener('change', (e) => setState({ abs: e.target.checked ? '1' : '0' }));
  for (const th of document.querySelectorAll('#top-table th[data-sort]'))
    th.addEventListener('click', () => {
      const k = th.dataset.sort;
      const def = k === 'name' ? 'asc' : 'desc';
      const cur = state.sort === k ? (state.order || def) : '';
      const order = cur ? (cur === 'asc' ? 'desc' : 'asc') : def;
      setState({ sort: k, order: order === def ? '' : order });
    });
  $('sw-fn').addEventListener('change', (e) => setState({ fn: e.target.value }));
  $('src-fn').addEventListener('change', (e) => setState({ fn: e.target.value }));
  $('sw-source').addEventListener('click', () => setState({ v: 'source' }));
  $('cg-nodes').addEventListener('change', (e) => setState({ cgn: e.target.value.trim() || DEFAULTS.cgn }));
  $('cg-lines').addEventListener('change', (e) => setState({ lines: e.target.checked ? '1' : '0' }));
  $('cg-diff').addEventListener('change', (e) => setState({ d: e.target.checked ? '1' : '0' }));
  $('cg-fit').addEventListener('change', (e) => setState({ fit: e.target.checked ? '1' : '0' }));

  document.addEventListener('keydown', (e) => {
    const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (state.v !== 'flame' && state.v !== 'icicle') return;
    const up = state.v === 'flame';
    const keys = {
      ArrowLeft: () => flame.move('prev'), ArrowRight: () => flame.move('next'),
      ArrowUp: () => flame.move(up ? 'child' : 'parent'),
      ArrowDown: () => flame.move(up ? 'parent' : 'child'),
      Enter: () => flame.sel > 0 && flame.onClick(flame.sel),
      Backspace: () => { const p = splitPath(state.root); p.pop(); setState({ root: joinPath(p) }); },
      Escape: () => { if (state.s) setState({ s: '' }); else setState({ root: '' }); },
      '/': () => $('search').focus(),
      s: () => { const i = flame.sel > 0 ? flame.sel : flame.hot; if (i > 0) setState({ v: 'sandwich', fn: flame.name(i) }); },
    };
    if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
  });
  window.addEventListener('popstate', onNavigate);
  window.addEventListener('hashchange', onNavigate);
  // The call graph's SVG scales itself; everything else is drawn anew.
  window.addEventListener('resize', debounce(() => (state.v === 'callgraph' ? tlData && drawTimeline() : render()), 200));
}

let base = null;

async function main() {
  readHash();
  wire();
  if (OFFLINE) Offline.setup();
  try {
    const ps = await api('profiles', new URLSearchParams());
    profiles = ps.profiles;
    if (OFFLINE) {
      // The saved profile only (offline.js says how it shows).
      profiles = Offline.profiles();
      state.p = '0';
    }
    base = ps.base;
    $('diff-label').hidden = !base;
    $('cg-diff-label').hidden = !base;
    $('top-diff-label').hidden = !base;
    if (base) $('diff-base').textContent = base.name.replace(/^.*\//, '');
  } catch (e) {
    showError(e.message);
    return;
  }
  await render();
  document.body.dataset.ready = '1';
}

main();
