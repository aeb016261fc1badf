// SPDX-License-Identifier: Apache-2.0
// The saved page's fetch layer: a page saved by kiln serve (save.c,
// "save as one HTML file") holds, for each sample type of its selection,
// the API's own answers (window.KILN_OFFLINE.types[i], one part per entry
// of save.c's save_parts[]), and app.js's api() asks here instead of the
// network.  The views draw those answers with the code that draws the live
// ones.  A request that a saved answer covers is answered from it: as
// saved (ANSWER has no entry for the path: summary, source), one of the
// hot functions' answers (parts saved {"by_fn": {...}}: sandwich, source),
// or, where the live page asks for less than was saved (a width, a zoom
// root, a search, a sort, one level of a tree), cut from it by ANSWER's
// entry for the path, as the server would have cut it.  What the page
// does not hold says so.  Uses app.js's globals (splitPath, escName, pct,
// ereToJs, searchRe, DEFAULTS, state, $); loaded before it, run after it.
'use strict';

const Offline = (() => {
  const D = window.KILN_OFFLINE || null;
  const SEL = ['focus', 'ignore', 'hide', 'labels', 'group', 't0', 't1'];
  const notHere = (what) => new Error(`not in this saved page: ${what} (kiln serve shows it)`);

  // The saved profile and the index of the type the selection was saved
  // with (its own, or the profile's default).
  const savedProfile = () => D.profiles.profiles[+D.sel.p || 0] || D.profiles.profiles[0];
  function savedType() {
    const t = D.sel.type;
    if (/^\d+$/.test(t || '')) return +t;
    const i = t ? D.types.findIndex((x) => x.type === t) : -1;
    return i >= 0 ? i : savedProfile().default_type;
  }

  // The saved data of the request's sample type; the request's selection
  // must be the saved one (the page cannot filter again).
  function typeData(q) {
    for (const k of SEL)
      if ((q.get(k) || '') !== (D.sel[k] || '')) throw notHere(`a ${k} other than the saved one (${D.sel[k] ? `'${D.sel[k]}'` : 'none'})`);
    const t = q.get('type');
    const i = !t ? savedType() : /^\d+$/.test(t) ? +t : D.types.findIndex((x) => x.type === t);
    if (!D.types[i]) throw notHere(`sample type '${t}'`);
    return D.types[i];
  }

  // A part as saved: null where it does not apply (no diff base, no
  // graphviz); parts saved per function answer for one of the hottest.
  function asSaved(path, q, part) {
    if (part === undefined || part === null) throw notHere(path);
    if (!part.by_fn) return part;
    const fn = q.get('fn') || '';
    if (Object.hasOwn(part.by_fn, fn)) return part.by_fn[fn];
    const max = path === 'disasm' ? D.disasm_max : D.source_max;
    throw notHere(`the ${path} of '${fn}': it holds those of the ${D.fns} hottest functions` +
      (path === 'disasm' ? ' whose binary kiln serve could read' : '') +
      (part.cut ? `, ${part.cut} of them left out to keep the file under ${max >> 20} MB` : ''));
  }

  // ---- cutting a saved tree as the server cuts it ----

  // Where the subtree of nodes[i] (depth-first, [name, depth, ...]) ends.
  const endOf = (N, i) => { let j = i + 1; while (j < N.length && N[j][1] > N[i][1]) j++; return j; };

  // The nodes under N[r] at least a pixel wide in W pixels, depths and x
  // from r on, with the search's matches m (an array, or null).
  function cut(N, r, W, m) {
    const rt = N[r][3], nodes = [];
    let depth = 0;
    for (let i = r, e = endOf(N, r); i < e; i++) {
      const n = N[i];
      if (i > r && n[3] * W / rt < 1) { i = endOf(N, i) - 1; continue; }
      const c = n.slice();
      c[1] = n[1] - N[r][1]; c[2] = n[2] - N[r][2];
      if (m) c[9] = m[i];
      if (c[1] > depth) depth = c[1];
      nodes.push(c);
    }
    return { nodes, depth };
  }

  function flame(q, T) {
    const rev = q.get('reverse') === '1', diff = q.get('diff') === '1';
    if (rev && diff) throw notHere('the leaf-rooted diff');
    const F = asSaved(diff ? 'diff flame graph' : 'flame graph', q, T[rev ? 'flame_rev' : diff ? 'flame_diff' : 'flame']);
    const N = F.nodes, W = +(q.get('width') || 1200);
    const nameOf = (n) => (n[0] < 0 ? 'all' : F.names[n[0]]);
    // The zoom root: down the path, child by child.
    let r = 0; const path = [];
    for (const name of splitPath(q.get('root') || '')) {
      let c = -1;
      for (let j = r + 1, e = endOf(N, r); j < e; j = endOf(N, j)) if (nameOf(N[j]) === name) { c = j; break; }
      if (c < 0) throw new Error(`no frame '${name}' under the zoom root in this saved page`);
      r = c; path.push({ name, total: N[r][3] });
    }
    const re = q.get('search') ? searchRe(q.get('search')) : null;
    const m = re ? N.map((n) => (n[0] >= 0 && re.test(F.names[n[0]]) ? 1 : 0)) : null;
    // Matched value: outermost matching frames, each sample once.
    const matchedIn = (a, b) => {
      let sum = 0;
      for (let i = a; i < b;) { if (m[i]) { sum += N[i][3]; i = endOf(N, i); } else i++; }
      return sum;
    };
    return { ...F, path, ...cut(N, r, W, m), width: W, matched: re ? matchedIn(0, N.length) : 0,
      matched_root: re ? matchedIn(r, endOf(N, r)) : 0 };
  }

  function top(q, T) {
    const lines = q.get('lines') === '1', diff = q.get('diff') === '1', abs = q.get('absolute') === '1';
    if (lines && diff) throw notHere('the diff by line');
    const P = asSaved(diff ? 'diff table' : 'top table', q,
      T[lines ? 'top_lines' : diff ? (abs ? 'top_diff_abs' : 'top_diff') : 'top']);
    const key = q.get('sort') || 'flat';
    const asc = q.get('order') ? q.get('order') === 'asc' : key === 'name';
    let rows = P.rows.map((row, i) => ({ ...row, i }));
    if (q.get('filter')) {
      let re;
      try { re = new RegExp(ereToJs(q.get('filter'))); } catch (e) { throw new Error(`bad filter regular expression: ${e.message}`); }
      rows = rows.filter((row) => re.test(row.name));
    }
    // Names ascending and numbers descending unless the order says not.
    const natural = key === 'name';
    rows.sort((a, b) => {
      let c = key === 'name' ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : b[key] - a[key];
      if (asc !== natural) c = -c;
      return c || a.i - b.i;
    });
    let sum = 0;
    rows.forEach((row) => { sum += row.flat; row.sum_pct = pct(sum, P.total); });
    const off = +(q.get('offset') || 0), n = +(q.get('n') || 100);
    return { ...P, count: rows.length, rows: n ? rows.slice(off, off + n) : rows.slice(off) };
  }

  // The call tree: saved as every level down to 1/20000 of the total
  // (min=: each level after the first names its node by its parent's level
  // and its place there); a request gets the level at its path and the
  // hot path's below it, as /api/calltree sends them.
  const childPath = (p, name) => (p ? p + ';' : '') + escName(name);
  const levelMaps = new WeakMap();
  function calltree(q, T) {
    const C = asSaved('call tree', q, T[q.get('reverse') === '1' ? 'calltree_rev' : 'calltree']);
    let L = levelMaps.get(C);
    if (!L) {
      const paths = [];
      L = new Map();
      C.levels.forEach((l, i) => {
        const up = i ? C.levels[l.up] : null;
        paths[i] = up ? childPath(paths[l.up], C.names[up.children[l.at][0]]) : l.path;
        L.set(paths[i], { path: paths[i], children: l.children, more: l.more, more_total: l.more_total });
      });
      levelMaps.set(C, L);
    }
    const open = +(q.get('open') || 0), levels = [];
    let p = q.get('path') || '';
    for (let k = 0; ; k++) {
      const l = L.get(p);
      if (!l) throw new Error(`no node '${p}' in this saved call tree (it holds the nodes down to 1/20000 of the total)`);
      levels.push(l);
      const hot = l.children[0];
      if (!hot || k >= open || !hot[3]) break;
      p = childPath(p, C.names[hot[0]]);
    }
    return { ...C, levels };
  }

  function sandwich(q, T) {
    const S = asSaved('sandwich', q, T.sandwich), W = +(q.get('width') || 1200);
    const side = (x) => (x.nodes.length ? cut(x.nodes, 0, W, null) : x);
    return { ...S, callers: side(S.callers), callees: side(S.callees) };
  }

  function callgraph(q, T) {
    if (q.get('nodes') || q.get('lines') || q.get('diff')) throw notHere('the call graph with other settings than the default ones');
    return asSaved('call graph (graphviz was not there when it was saved)', q, T.callgraph);
  }

  // The stack chart: saved per thread (the busiest, as far as the size
  // cap let) over the selection's whole span at a fixed width (save.c's
  // SAVE_SC_WIDTH); a request for a window at a width gets the saved runs
  // that overlap the window, merged at its pixels as /api/stackchart
  // merges them (runs a pixel wide or more as they are; of those
  // narrower, each pixel column keeps the longest, stretched over what the
  // column's runs covered).  Zooming in past the saved resolution shows
  // the saved runs, wider than a pixel: no finer detail is here.  The
  // window's sample count takes a run that reaches out of it by its share
  // of the run's time.
  function stackchart(q, T) {
    const S = T.stackchart;
    if (!S) throw notHere('the stack chart (no sample of this selection has a time)');
    const pid = q.get('pid'), tid = q.get('tid');
    const A = pid == null && tid == null ? S.by_thread[0] :
      S.by_thread.find((a) => String(a.pid) === pid && String(a.tid) === tid);
    if (!A) {
      throw notHere(`the stack chart of ${tid == null ? 'any thread' : `thread ${tid}`}: it holds those of the ` +
        `${S.threads} busiest threads` + (S.cut ? `, ${S.cut} of them left out to keep the stack charts of the file under ${D.stackchart_max >> 20} MB` : ''));
    }
    const from = q.get('from') ? +q.get('from') : 0, to = q.get('to') ? +q.get('to') : A.end;
    const W = Math.max(1, +(q.get('width') || 1200)), px = (to - from) / W;
    if (!(to > from)) throw new Error(`bad window: from ${from} is not before to ${to}`);
    const runs = [];
    let samples = 0, col = null, colPx = -1;
    const put = (r) => {
      const l = runs[runs.length - 1];
      if (l && l[2] === r[2] && r[0] <= l[1]) { l[1] = Math.max(l[1], r[1]); l[3] += r[3]; l[4] += r[4]; } else runs.push(r.slice());
    };
    for (const r of A.runs) {
      if (r[1] <= from || r[0] >= to) continue;
      // A run reaching out of the window: its share of its samples.
      samples += r[0] >= from && r[1] <= to ? r[4] :
        Math.max(1, Math.round(r[4] * (Math.min(r[1], to) - Math.max(r[0], from)) / (r[1] - r[0])));
      if (r[1] - r[0] >= px) { if (col) { put(col.r); col = null; } put(r); continue; }
      const p0 = Math.floor((r[0] - from) / px);
      if (col && p0 !== colPx) { put(col.r); col = null; }
      if (!col) { colPx = p0; col = { t0: r[0], len: 0, v: 0, n: 0, stack: r[2], r: null }; }
      col.v += r[3]; col.n += r[4];
      if (r[1] - r[0] > col.len) { col.len = r[1] - r[0]; col.stack = r[2]; }
      col.r = [col.t0, r[1], col.stack, col.v, col.n];
    }
    if (col) put(col.r);
    // The thread list and count: the saved threads only (the others are
    // not here).
    const saved = new Set(S.by_thread.map((a) => `${a.pid}:${a.tid}`));
    return { ...A, from, to, width: W, runs, samples, nthreads: saved.size,
      threads: A.threads.filter((t) => saved.has(`${t[0]}:${t[1]}`)) };
  }

  // ---- the heap views, saved once for the page (save.c save_heap()) ----

  // The per-site chart of every site kept, cut to the n asked: the sites
  // left out go to "other", as the server adds them.
  function heapSites(q) {
    const S = D.heap.sites, n = +(q.get('n') || 8);
    if (n >= S.sites.length) return S;
    const other = S.other.slice();
    for (const s of S.sites.slice(n)) s.values.forEach((v, i) => { other[i] += v; });
    return { ...S, sites: S.sites.slice(0, n), other };
  }

  // The allocation list alive at the end: the saved blocks paged, and
  // filtered by lifetime, size or site (as format/heaptrace-allocs.c
  // filters: bounds included) where they are every such block.
  function heapAllocs(q) {
    const A = D.heap.allocs;
    if ((q.get('alive') || '') !== 'end') throw notHere('an allocation list other than the blocks alive at the end');
    const num = (k, d) => (q.get(k) ? +q.get(k) : d);
    const keys = ['life_min', 'life_max', 'size_min', 'size_max', 'site'];
    const filtered = keys.some((k) => q.get(k));
    const whole = A.count <= A.allocs.length;
    if (filtered && !whole) throw notHere(`a filter of the ${A.count} blocks alive at the end (it holds the first ${A.allocs.length})`);
    const [lmin, lmax, smin, smax, site] = [num('life_min', 0), num('life_max', Infinity),
      num('size_min', 0), num('size_max', Infinity), num('site', 0)];
    const list = !filtered ? A.allocs : A.allocs.filter((a) => {
      const life = A.read_to - a[0];
      return life >= lmin && life <= lmax && a[2] >= smin && a[2] <= smax && (!site || a[3] === site);
    });
    const off = num('offset', 0), n = num('n', 100);
    if (off >= list.length && off < (filtered ? list.length : A.count)) throw notHere(`blocks past the first ${A.allocs.length} alive at the end`);
    const out = { ...A, offset: off, allocs: list.slice(off, off + n) };
    if (!filtered) return out;
    // The size classes of what passed: [2^(k-1), 2^k - 1], 0 alone.
    const cls = new Map();
    for (const a of list) {
      const k = a[2] ? Math.floor(Math.log2(a[2])) + 1 : 0;
      const c = cls.get(k) || [k ? 2 ** (k - 1) : 0, k ? 2 ** k - 1 : 0, 0, 0];
      c[2]++; c[3] += a[2]; cls.set(k, c);
    }
    return { ...out, count: list.length, bytes: list.reduce((b, a) => b + a[2], 0),
      sizes: [...cls.keys()].sort((x, y) => x - y).map((k) => cls.get(k)) };
  }

  // How a request to a path is answered from its saved part(s); a path
  // without an entry gets its part as saved.
  const ANSWER = { flame, top, calltree, sandwich, callgraph, stackchart };
  const HEAP = { 'heap/sites': heapSites, 'heap/allocs': heapAllocs };

  function api(path, q) {
    if (path === 'profiles') return D.profiles;
    const T = typeData(q);
    if (HEAP[path]) {
      if (!D.heap) throw notHere(path);
      return HEAP[path](q);
    }
    return ANSWER[path] ? ANSWER[path](q, T) : asSaved(path, q, T[path]);
  }

  // The inputs as the page shows them: the saved profile only, its saved
  // type first selected, with times where a stack chart was saved (the
  // timeline is not here: app.js's renderTimeline() skips it).
  function profiles() {
    const p = savedProfile();
    return [{ ...p, times: D.types.some((T) => T.stackchart), default_type: savedType() }];
  }

  // Which views the page holds: a tab shows when some type has its part;
  // the stack chart's always (without times it says so, as live).
  // the disassembly's where some function has one (a binary was read).
  const has = (v) => v === 'stackchart' || (v === 'heap' && !!D.heap) ||
    D.types.some((T) => T[v === 'icicle' ? 'flame' : v] != null && (v !== 'disasm' || Object.keys(T.disasm.by_fn).length));

  // Before the first draw: the saved selection as the defaults (so the
  // URL need not carry it), the tabs and help of what is here, the
  // selection's controls fixed, a line that says what this page is.
  function setup() {
    const p = savedProfile(), s = D.sel;
    document.title = `kiln: ${p.name}`;     // as the <title> the server wrote
    DEFAULTS.focus = s.focus || ''; DEFAULTS.ignore = s.ignore || ''; DEFAULTS.hide = s.hide || '';
    DEFAULTS.lf = s.labels || ''; DEFAULTS.g = s.group || ''; DEFAULTS.tf = s.tf || '';
    if (s.t0 && s.t1) { DEFAULTS.t0 = s.t0; DEFAULTS.t1 = s.t1; }
    readHash();
    for (const a of document.querySelectorAll('#tabs a[data-view]')) a.hidden = !has(a.dataset.view);
    for (const id of ['downloads', 'timeline-view', 'sw-source']) $(id).hidden = true;
    if (has('source')) $('sw-source').hidden = false;
    if (!has('disasm')) $('src-disasm').hidden = true;
    // Its help names only what it has: no transforms (they filter anew).
    for (const h of document.querySelectorAll('#calltree-view .help'))
      h.textContent = h.textContent.replace(' · m: merge the function · right-click or the menu key: transforms', '');
    // No source text in the whole page: said once, above the costs.
    const texts = D.types.some((T) => T.source && Object.values(T.source.by_fn).some((a) => a.files.some((f) => f.text)));
    if (has('source') && !texts) {
      const note = document.createElement('p');
      note.id = 'src-none'; note.className = 'empty';
      note.textContent = 'no source file of this profile was readable when the page was saved: the costs per line only';
      $('src').before(note);
    }
    for (const id of ['profile', 'focus', 'ignore', 'hide', 'heavy', 'cg-nodes', 'cg-lines'])
      $(id).disabled = true;
    $('saved').hidden = false;
    $('saved').textContent = `saved page of ${p.name}` + (s.focus ? `, focus ${s.focus}` : '') +
      (s.ignore ? `, ignore ${s.ignore}` : '') + (s.hide ? `, hide ${s.hide}` : '') +
      (s.labels ? `, labels ${s.labels}` : '') + (s.group ? `, grouped by ${s.group}` : '') +
      (s.t0 ? `, ${fmtSec(+s.t0, +s.t1)} – ${fmtSec(+s.t1, +s.t1)}` : '');
    $('saved').title = `sandwich, source and disassembly of the ${D.fns} hottest functions of each sample type; ` +
      'the call tree and flame graph down to 1/20000 of the total' +
      (D.types.some((T) => T.stackchart) ? `; the stack chart of the busiest threads at ${D.types.find((T) => T.stackchart).stackchart.width} pixels over the selection's span` : '');
  }

  return { on: !!D, data: D, api, profiles, setup, has };
})();
