// SPDX-License-Identifier: Apache-2.0
// kiln serve's page: the stack chart (issue 26, item 3): one thread's
// samples in time order, as speedscope's Time Order and Firefox's Stack
// Chart show them: time across, the stack downwards from the root, one
// box per frame over the time it stayed on the stack.  The server sends,
// for the visible window, the runs of identical stacks merged at the
// window's pixels (/api/stackchart); zooming (wheel, drag, the minimap)
// asks again for the narrower window, down to a single sample.  The
// thread (sct=PID:TID) and the window (sx=FROM,TO in ns) are in the URL.
'use strict';

const StackChart = (() => {
  const SC_ROW = 16, SC_AXIS = 18, MIN_NS = 1e5;
  let data = null, mini = null, miniData = null, miniKey = '', boxes = [], view = null;

  const ns = (x) => fmtSec(x, view ? view[1] - view[0] : 1e9);
  // The selection's span: its time range, or the whole run.
  const span = (d) => (state.t0 && state.t1 ? [+state.t0, +state.t1] : [0, d.end]);
  // The window in ns, from the URL (within the span), or the span.
  function windowOf(d) {
    const [s0, s1] = span(d), m = /^(\d+),(\d+)$/.exec(state.sx || '');
    if (!m) return [s0, s1];
    const a = Math.max(+m[1], s0), b = Math.min(+m[2], s1);
    return b > a ? [a, b] : [s0, s1];
  }

  function query(width) {
    const q = sel();
    const m = /^(-?\d+):(-?\d+)$/.exec(state.sct || '');
    if (m) { q.set('pid', m[1]); q.set('tid', m[2]); }
    q.set('width', String(Math.max(1, Math.round(width))));
    return q;
  }

  async function render(gen) {
    const prof = profiles[+state.p];
    const empty = $('sc-empty');
    if (!prof || !prof.times) {
      empty.hidden = false;
      empty.textContent = 'No stack chart: this profile has no sample times (kiln record keeps them; a pprof file of a plain counter does not).';
      $('sc-body').hidden = true;
      return;
    }
    empty.hidden = true; $('sc-body').hidden = false;
    const W = $('sc-wrap').clientWidth;
    // The minimap: the thread over the whole selection (kept per key).
    const mq = query($('sc-mini').clientWidth || W);
    const mk = mq.toString();
    const wantMini = mk !== miniKey ? api('stackchart', mq) : null;
    // The window: the URL's, else the selection's span (known once the
    // minimap's answer says where the run ends).
    const got = wantMini ? await wantMini : null;
    if (gen !== generation) return;
    if (wantMini) { miniData = got; miniKey = mk; }
    const [a, b] = windowOf(miniData);
    const q = query(W);
    const [s0, s1] = span(miniData);
    let d = miniData;
    if (a > s0 || b < s1 || W !== ($('sc-mini').clientWidth || W)) {
      q.set('from', String(Math.floor(a))); q.set('to', String(Math.ceil(b)));
      d = await api('stackchart', q);
      if (gen !== generation) return;
    }
    data = d; view = [a, b];
    threads(d);
    draw();
    if (wantMini) mini.set(paintMini);
    showMini();
  }

  function threads(d) {
    const s = $('sc-thread');
    s.replaceChildren(...d.threads.map(([pid, tid, name, total]) =>
      new Option(`${name >= 0 ? d.names[name] : '?'} ${tid} (pid ${pid}, ${fmtValue(total, d.unit)})`, `${pid}:${tid}`)));
    s.value = `${d.pid}:${d.tid}`;
    $('sc-summary').textContent = `${d.nthreads} thread${d.nthreads === 1 ? '' : 's'} · ` +
      `${ns(view[0])} – ${ns(view[1])} (${ns(view[1] - view[0])}): ${d.samples} sample${d.samples === 1 ? '' : 's'}, ${d.runs.length} run${d.runs.length === 1 ? '' : 's'} drawn`;
  }

  function showMini() {
    const [s0, s1] = span(miniData), S = s1 - s0 || 1;
    mini.show((view[0] - s0) / S, (view[1] - s0) / S);
  }

  // The minimap: the runs' stacks as thin columns, as deep as they go.
  function paintMini(g, w, h) {
    const d = miniData;
    if (!d) return;
    const [s0, s1] = span(d), S = s1 - s0 || 1;
    let depth = 1;
    for (const st of d.stacks) depth = Math.max(depth, st.length);
    const rh = h / depth;
    for (const r of d.runs) {
      const st = d.stacks[r[2]], x = (r[0] - s0) / S * w, ww = Math.max((r[1] - r[0]) / S * w, 0.5);
      st.forEach((f, k) => { g.fillStyle = colour(d.frames[f][1], 0); g.fillRect(x, k * rh, ww, rh); });
    }
  }

  // Boxes: a frame at one depth over consecutive runs whose stacks share
  // everything down to it (and that touch in time) is one box.  Made once
  // per answer, grouped by colour (a wheel redraw only places them).
  let laid = null;
  function layout(d) {
    if (laid && laid.d === d) return laid;
    const out = [], open = [];
    let prev = null, depth = 0;
    const close = (from) => { while (open.length > from) out.push(open.pop()); };
    for (let i = 0; i < d.runs.length; i++) {
      const r = d.runs[i], st = d.stacks[r[2]];
      let k = 0;
      if (prev && r[0] <= prev[1]) {
        const ps = d.stacks[prev[2]];
        while (k < st.length && k < ps.length && st[k] === ps[k]) k++;
      }
      close(k);
      for (let j = 0; j < k; j++) { open[j].t1 = r[1]; open[j].n += r[4]; }
      for (let j = k; j < st.length; j++) open.push({ f: st[j], depth: j, t0: r[0], t1: r[1], n: r[4], run: i, x: 0, w: 0 });
      if (st.length > depth) depth = st.length;
      prev = r;
    }
    close(0);
    const groups = new Map();
    for (const b of out) {
      const rgb = d.frames[b.f][1];
      if (!groups.has(rgb)) groups.set(rgb, []);
      groups.get(rgb).push(b);
    }
    laid = { d, boxes: out, depth, groups: [...groups].map(([rgb, bs]) => [colour(rgb, 0), bs]) };
    return laid;
  }

  function draw() {
    const d = data, c = $('stackchart'), dpr = window.devicePixelRatio || 1;
    const W = c.parentElement.clientWidth;
    const L = layout(d), x0 = view[0], k = W / (view[1] - view[0]);
    boxes = L.boxes;
    for (const b of boxes) { b.x = (b.t0 - x0) * k; b.w = (b.t1 - b.t0) * k; }
    const h = SC_AXIS + Math.max(L.depth, 1) * SC_ROW + 2;
    const cw = Math.round(W * dpr), ch = Math.round(h * dpr);
    if (c.width !== cw || c.height !== ch) { c.style.height = h + 'px'; c.width = cw; c.height = ch; }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, h);
    g.font = '11px ui-monospace, monospace'; g.textBaseline = 'middle';
    // Time axis: about one tick per 120 px.
    const S = view[1] - view[0], raw = S / Math.max(1, W / 120);
    const p10 = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    const step = [1, 2, 5, 10].map((m) => m * p10).find((v) => v >= raw) || p10 * 10;
    g.fillStyle = '#777';
    for (let t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
      const x = (t - view[0]) / S * W;
      g.fillRect(x, SC_AXIS - 5, 1, 5);
      g.fillText(fmtSec(t, S < 1e7 ? 1 : S), Math.min(x + 2, W - 60), SC_AXIS / 2 - 1);
    }
    // The boxes, a colour at a time (few fill changes), then the names.
    const named = [];
    for (const [fill, bs] of L.groups) {
      g.fillStyle = fill;
      for (const b of bs) {
        if (b.x + b.w < 0 || b.x > W) continue;
        const y = SC_AXIS + b.depth * SC_ROW, x = Math.max(b.x, 0), w = Math.min(b.x + b.w, W) - x;
        g.fillRect(x, y, Math.max(w - 0.5, 0.5), SC_ROW - 1);
        if (w > 28) named.push([b, x, y, w]);
      }
    }
    g.fillStyle = '#000';
    for (const [b, x, y, w] of named) {
      const name = d.names[d.frames[b.f][0]], room = Math.floor((w - 6) / 6.7);
      if (room > 2) g.fillText(name.length <= room ? name : name.slice(0, room - 2) + '..', x + 3, y + SC_ROW / 2, w - 6);
    }
    c.dataset.from = String(Math.round(view[0])); c.dataset.to = String(Math.round(view[1]));
  }

  function at(e) {
    const c = $('stackchart'), r = c.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    const depth = Math.floor((y - SC_AXIS) / SC_ROW);
    for (const b of boxes) if (b.depth === depth && x >= b.x && x < b.x + Math.max(b.w, 1)) return b;
    return null;
  }

  function hover(e) {
    const t = $('tip'), b = data && at(e);
    if (!b) { t.hidden = true; $('sc-details').textContent = ''; return; }
    const d = data, r = d.runs[b.run], st = d.stacks[r[2]];
    const name = (f) => d.names[d.frames[f][0]];
    const stack = st.slice(0, b.depth + 1).map(name);
    $('sc-details').textContent = `${name(b.f)}: ${ns(b.t0)} – ${ns(b.t1)} (${ns(b.t1 - b.t0)})`;
    t.textContent = `${name(b.f)}\n${ns(b.t0)} – ${ns(b.t1)} (${ns(b.t1 - b.t0)}), ${b.n} sample${b.n === 1 ? '' : 's'}\n` +
      `stack (root first):\n  ${stack.join('\n  ')}` +
      (st.length > b.depth + 1 ? `\n  … ${st.slice(b.depth + 1).map(name).join(' → ')}` : '');
    t.hidden = false;
    t.style.left = Math.min(e.clientX + 12, window.innerWidth - t.offsetWidth - 4) + 'px';
    t.style.top = Math.max(Math.min(e.clientY + 16, window.innerHeight - t.offsetHeight - 4), 0) + 'px';
  }

  // The window as fractions of the span, for Zoom, and back.
  function frac() {
    const [s0, s1] = span(miniData), S = s1 - s0 || 1;
    return [(view[0] - s0) / S, (view[1] - s0) / S];
  }
  function setFrac(a, b, done) {
    if (!miniData) return;
    const [s0, s1] = span(miniData), S = s1 - s0 || 1;
    view = [s0 + a * S, s0 + b * S];
    draw(); showMini();
    if (done) {
      const full = a <= 0 && b >= 1;
      setState({ sx: full ? '' : `${Math.floor(view[0])},${Math.ceil(view[1])}` }, true);
    }
  }

  function wire() {
    const c = $('stackchart');
    mini = new Zoom.Minimap($('sc-mini'), (a, b) => setFrac(a, b, true));
    Zoom.attach(c, () => (view && miniData ? frac() : [0, 1]), setFrac, {
      min: () => { const [s0, s1] = span(miniData || { end: 1 }); return MIN_NS / Math.max(s1 - s0, 1); },
    });
    c.addEventListener('mousemove', hover);
    c.addEventListener('mouseleave', () => { $('tip').hidden = true; });
    c.addEventListener('dblclick', () => setState({ sx: '' }));
    // A click on a box zooms to it.
    c.addEventListener('click', (e) => {
      const b = at(e);
      if (b) setState({ sx: `${Math.floor(b.t0)},${Math.ceil(b.t1)}` });
    });
    $('sc-thread').addEventListener('change', (e) => setState({ sct: e.target.value, sx: '' }));
    $('sc-all').addEventListener('click', () => setState({ sx: '' }));
  }

  return { render, wire };
})();
