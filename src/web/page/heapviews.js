// SPDX-License-Identifier: Apache-2.0
// kiln serve's heap views (kiln heap traces): memory per allocation site
// over time (the top sites stacked, the rest as "other", a legend whose
// labels all differ), allocations and temporary allocations over time,
// the size histogram (/api/heap/sites: kept from the trace's one
// analysis, a time range is a slice of it), and the allocation list with
// its filters (/api/heap/allocs: read from the trace's time index, one
// page at a time).  Top-down and bottom-up tables per cost type are the
// call tree with the trace's types: linked, not drawn again.  State in
// the URL: hn= (sites shown) and hf= (the list's filters, as the
// server's arguments; by default alive=end, the leaks, which the time
// index answers without reading: a list with no filter reads the whole
// trace, so it is asked for, not opened with).  Uses app.js's globals; loaded before it, run
// after it.
'use strict';

const HeapViews = (() => {
  // Distinct colours, most distinct first; "other" is grey.
  const COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948',
    '#b07aa1', '#ff9da7', '#9c755f', '#1f77b4', '#d62728', '#2ca02c', '#9467bd',
    '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
  const OTHER = '#c8c8c8';
  const PAGE = 100;
  let sites = null;             // the last /api/heap/sites answer
  const B = (v) => fmtValue(Math.round(v), 'bytes');
  const S = (ns) => `${(ns / 1e9).toFixed(3)} s`;

  const filters = () => new URLSearchParams(state.hf);
  function range(q) {
    if (state.t0 && state.t1) { q.set('t0', state.t0); q.set('t1', state.t1); }
    return q;
  }

  // A canvas sized to its box, for the device's pixels.
  function canvas(id, height) {
    const c = $(id);
    const w = Math.max(100, c.parentElement.clientWidth);
    const dpr = window.devicePixelRatio || 1;
    c.width = w * dpr; c.height = height * dpr;
    c.style.height = `${height}px`;
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, height);
    return [g, w];
  }

  function drawSites(d) {
    const H = 260, n = d.buckets;
    const [g, w] = canvas('heap-sites', H);
    const bands = [...d.sites.map((s) => s.values), d.other];
    let top = 1;
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (const b of bands) sum += b[i];
      top = Math.max(top, sum, d.total[i]);
    }
    const x = (i) => (i * w) / Math.max(1, n);
    const y = (v) => H - 4 - ((H - 8) * v) / top;
    const base = new Array(n).fill(0);
    bands.forEach((b, k) => {
      g.beginPath();
      for (let i = 0; i < n; i++) { g.lineTo(x(i), y(base[i] + b[i])); g.lineTo(x(i + 1), y(base[i] + b[i])); }
      for (let i = n - 1; i >= 0; i--) { g.lineTo(x(i + 1), y(base[i])); g.lineTo(x(i), y(base[i])); }
      g.closePath();
      g.fillStyle = k < d.sites.length ? COLOURS[k % COLOURS.length] : OTHER;
      g.fill();
      for (let i = 0; i < n; i++) base[i] += b[i];
    });
    // The size at the top, and times below.
    g.fillStyle = 'rgba(255,255,255,.8)';
    g.fillRect(0, 0, 70, 16);
    g.fillStyle = '#555';
    g.fillText(B(top), 4, 12);
    for (let k = 0; k <= 4; k++) {
      const t = (d.first + (n * k) / 4) * d.bucket_ns;
      const s = S(t);
      const tx = Math.min(w - g.measureText(s).width - 2, Math.max(2, (w * k) / 4 - g.measureText(s).width / 2));
      g.fillStyle = 'rgba(255,255,255,.8)';
      g.fillRect(tx - 2, H - 16, g.measureText(s).width + 4, 14);
      g.fillStyle = '#333';
      g.fillText(s, tx, H - 5);
    }
    $('heap-sites').dataset.drawn = String(n);
  }

  function legend(d) {
    const items = d.sites.map((s, k) => {
      const li = document.createElement('li');
      li.dataset.stack = String(s.stack);
      li.dataset.max = String(s.max);
      li.dataset.leaked = String(s.leaked);
      const sw = document.createElement('span');
      sw.className = 'sw'; sw.style.background = COLOURS[k % COLOURS.length];
      const lab = document.createElement('span');
      lab.className = 'lab'; lab.textContent = s.label;
      const v = document.createElement('span');
      v.className = 'val';
      v.textContent = `most ${B(s.max)} · at the peak ${B(s.peak)} · leaked ${B(s.leaked)}`;
      li.append(sw, lab, v);
      return li;
    });
    const rest = d.sites_total - d.sites.length;
    const li = document.createElement('li');
    li.className = 'other';
    const sw = document.createElement('span');
    sw.className = 'sw'; sw.style.background = OTHER;
    li.append(sw, `other${rest > 0 ? ` (${rest} more site${rest === 1 ? '' : 's'})` : ''}`);
    $('heap-legend').replaceChildren(...items, li);
  }

  function drawCounts(d) {
    const H = 120, n = d.buckets;
    const [g, w] = canvas('heap-counts', H);
    const top = Math.max(1, ...d.calls);
    const bw = w / Math.max(1, n);
    for (let i = 0; i < n; i++) {
      const hc = ((H - 4) * d.calls[i]) / top, ht = ((H - 4) * d.temporary[i]) / top;
      g.fillStyle = '#4e79a7'; g.fillRect(i * bw, H - hc, Math.max(1, bw - 0.5), hc);
      g.fillStyle = '#f28e2b'; g.fillRect(i * bw, H - ht, Math.max(1, bw - 0.5), ht);
    }
    const label = `${top.toLocaleString('en-US')} per ${S(d.bucket_ns)}`;
    g.fillStyle = 'rgba(255,255,255,.85)';
    g.fillRect(0, 0, g.measureText(label).width + 8, 16);
    g.fillStyle = '#555';
    g.fillText(label, 4, 12);
    const sum = (a) => a.reduce((x, v) => x + v, 0);
    $('heap-counts-sum').textContent = `${sum(d.calls).toLocaleString('en-US')} allocations, ` +
      `${sum(d.temporary).toLocaleString('en-US')} temporary (freed by the next heap event)`;
  }

  // [[min, max, calls, bytes], ...] as a table with bars.
  function sizes(id, rows) {
    const top = Math.max(1, ...rows.map((r) => r[2]));
    const tb = document.querySelector(`#${id} tbody`);
    tb.replaceChildren(...rows.map(([lo, hi, n, bytes]) => {
      const tr = document.createElement('tr');
      const bar = document.createElement('div');
      bar.className = 'bar'; bar.style.width = `${(100 * n) / top}%`;
      for (const t of [`${B(lo)} – ${B(hi)}`, n.toLocaleString('en-US'), B(bytes)]) {
        const td = document.createElement('td'); td.textContent = t; tr.append(td);
      }
      const td = document.createElement('td'); td.className = 'barcell'; td.append(bar); tr.append(td);
      return tr;
    }));
  }

  function hover(e) {
    const t = $('tip');
    if (!sites || !sites.buckets) return;
    const r = $('heap-sites').getBoundingClientRect();
    const i = Math.min(sites.buckets - 1, Math.floor(((e.clientX - r.left) * sites.buckets) / r.width));
    const at = (sites.first + i) * sites.bucket_ns;
    t.textContent = `${S(at)} – ${S(at + sites.bucket_ns)}: heap ${B(sites.total[i])}\n` +
      sites.sites.map((s) => `${B(s.values[i]).padStart(10)}  ${s.label}`).join('\n') +
      `\n${B(sites.other[i]).padStart(10)}  other`;
    t.hidden = false;
    t.style.left = Math.min(e.clientX + 12, window.innerWidth - t.offsetWidth - 4) + 'px';
    t.style.top = (e.clientY + 16) + 'px';
  }

  // The filter form from hf=, and back.
  // The filter last shown in the form: a render of the same filter (a
  // resize, another range) leaves the form alone, which may hold edits
  // not applied yet.
  let shownHf = null;
  function showFilters() {
    const f = filters();
    const same = shownHf === state.hf;
    shownHf = state.hf;
    const site = $('ha-site');
    const picked = site.value;
    site.replaceChildren(new Option('any', ''), ...(sites ? sites.sites : []).map((s) =>
      new Option(s.label, String(s.stack))));
    const want = same ? picked : f.get('site') || '';
    if (want && ![...site.options].some((o) => o.value === want))
      site.append(new Option(`stack ${want}`, want));
    site.value = want;
    if (same) return;
    const alive = f.get('alive');
    $('ha-alive').value = !alive ? '' : alive === 'end' ? 'end' : 'at';
    $('ha-at').value = alive && alive !== 'end' ? String(+alive / 1e9) : '';
    $('ha-at').hidden = $('ha-alive').value !== 'at';
    const sec = (k) => (f.get(k) ? String(+f.get(k) / 1e9) : '');
    $('ha-lmin').value = sec('life_min');
    $('ha-lmax').value = sec('life_max');
    $('ha-smin').value = f.get('size_min') || '';
    $('ha-smax').value = f.get('size_max') || '';
  }
  function apply(offset) {
    const f = new URLSearchParams();
    const ns = (v) => String(Math.round(parseFloat(v) * 1e9));
    const a = $('ha-alive').value;
    if (a === 'end') f.set('alive', 'end');
    else if (a === 'at' && $('ha-at').value !== '') f.set('alive', ns($('ha-at').value));
    if ($('ha-lmin').value !== '') f.set('life_min', ns($('ha-lmin').value));
    if ($('ha-lmax').value !== '') f.set('life_max', ns($('ha-lmax').value));
    if ($('ha-smin').value !== '') f.set('size_min', $('ha-smin').value);
    if ($('ha-smax').value !== '') f.set('size_max', $('ha-smax').value);
    if ($('ha-site').value) f.set('site', $('ha-site').value);
    if (offset) f.set('offset', String(offset));
    setState({ hf: f.toString() });
  }

  function list(d) {
    const off = d.offset;
    const life = (a) => (a[1] !== null ? a[1] - a[0] : d.to_end ? d.read_to - a[0] : null);
    const tb = document.querySelector('#heap-allocs tbody');
    tb.replaceChildren(...d.allocs.map((a) => {
      const tr = document.createElement('tr');
      const l = life(a);
      const freed = a[1] !== null ? S(a[1]) : d.to_end ? 'live at the end' : `after ${S(d.read_to)}`;
      const cells = [S(a[0]), freed, l === null ? `> ${S(d.read_to - a[0])}` : S(l), B(a[2]),
        d.sites[String(a[3])] || `stack ${a[3]}`, String(a[4])];
      cells.forEach((t, k) => {
        const td = document.createElement('td'); td.textContent = t;
        if (k < 4) td.className = 'num';
        tr.append(td);
      });
      tr.dataset.t = String(a[0]); tr.dataset.size = String(a[2]); tr.dataset.stack = String(a[3]);
      return tr;
    }));
    $('ha-summary').textContent = `${d.count.toLocaleString('en-US')} blocks, ${B(d.bytes)}` +
      (d.count ? ` · showing ${off + 1}–${off + d.allocs.length}` : '') +
      ` · read ${S(d.read_from)} – ${d.to_end ? 'the end' : S(d.read_to)} of the trace`;
    $('ha-summary').dataset.count = String(d.count);
    $('ha-prev').disabled = off === 0;
    $('ha-next').disabled = off + d.allocs.length >= d.count;
    sizes('ha-sizes', d.sizes);
  }

  async function render(gen) {
    const prof = profiles[+state.p];
    if (!prof || prof.format !== 'heap-trace') {
      $('heap-main').hidden = true;
      $('heap-none').hidden = false;
      return;
    }
    $('heap-main').hidden = false;
    $('heap-none').hidden = true;
    const q = range(sel());
    q.set('n', state.hn);
    const aq = range(sel());
    for (const [k, v] of filters()) aq.set(k, v);
    aq.set('n', String(PAGE));
    const [d, a] = await Promise.all([api('heap/sites', q), api('heap/allocs', aq)]);
    if (gen !== generation) return;
    sites = d;
    $('hn').value = state.hn;
    drawSites(d);
    legend(d);
    drawCounts(d);
    sizes('heap-size-table', d.sizes);
    $('heap-range').textContent = state.t0 && state.t1 ? `${S(+state.t0)} – ${S(+state.t1)} (the range chosen above)` :
      `the whole trace, ${S(d.span)}`;
    // The call tree with each heap type: top-down, and bottom-up (inverted).
    const links = $('heap-trees');
    links.replaceChildren(...prof.types.flatMap((t) => ['0', '1'].map((rev) => {
      const h = new URLSearchParams(location.hash.slice(1));
      h.set('v', 'calltree'); h.set('type', t.type);
      if (rev === '1') h.set('rev', '1'); else h.delete('rev');
      const el = document.createElement('a');
      el.href = `#${h.toString()}`;
      el.textContent = `${t.type} ${rev === '1' ? 'bottom-up' : 'top-down'}`;
      return el;
    })));
    showFilters();
    list(a);
  }

  function wire() {
    $('heap-sites').addEventListener('mousemove', hover);
    $('heap-sites').addEventListener('mouseleave', () => { $('tip').hidden = true; });
    $('hn').addEventListener('change', () => setState({ hn: $('hn').value }));
    $('ha-alive').addEventListener('change', () => { $('ha-at').hidden = $('ha-alive').value !== 'at'; });
    $('ha-apply').addEventListener('click', () => apply(0));
    $('ha-clear').addEventListener('click', () => setState({ hf: '' }));
    $('ha-form').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); apply(0); } });
    const page = (k) => {
      const off = Math.max(0, (+filters().get('offset') || 0) + k * PAGE);
      const f = filters();
      if (off) f.set('offset', String(off)); else f.delete('offset');
      setState({ hf: f.toString() });
    };
    $('ha-prev').addEventListener('click', () => page(-1));
    $('ha-next').addEventListener('click', () => page(1));
  }

  return { render, wire };
})();
