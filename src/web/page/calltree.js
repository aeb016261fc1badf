// SPDX-License-Identifier: Apache-2.0
// kiln serve's call tree view: an expandable table of the selection's tree,
// top-down or inverted (leaf-rooted, the "leaf-rooted" box the flame graph
// shares), with each node's total, self and share of the selection.  The
// server sends one node's children at a time (the heaviest first, at most a
// few hundred: /api/calltree), so a large profile costs what is open; the
// first answer also opens the hot path.  The selected node is in the URL
// (ct=, a path as the flame graph's root= writes it).  Uses app.js's
// globals (state, api, sel, setState, fmtValue, splitPath, joinPath);
// loaded before it, run after it.
'use strict';

const CallTree = (() => {
  const HOT = 64;               // hot-path levels the first answer opens
  let key = null;               // the selection the data below are of
  let total = 0, unit = '';
  let kids = new Map();         // path -> { children: [node], more, moreTotal }
  let open = new Set(['']);     // paths whose children are shown
  let rows = [];                // the drawn rows, in order
  let chosen = '';              // the selected path
  let hotEnd = '';              // where the hot path ends (selected at first)

  const childPath = (path, name) => (path ? path + ';' : '') + escName(name);
  const parentPath = (path) => { const p = splitPath(path); p.pop(); return joinPath(p); };

  // Adds an answer's levels; marks them open when told to.
  function take(d, markOpen) {
    total = d.total; unit = d.unit;
    for (const l of d.levels) {
      kids.set(l.path, {
        more: l.more, moreTotal: l.more_total,
        children: l.children.map((c) => ({
          name: d.names[c[0]], total: c[1], self: c[2], nkids: c[3],
          file: c[4] >= 0 ? d.names[c[4]] : '', line: c[5], module: c[7] >= 0 ? d.names[c[7]] : '',
          path: childPath(l.path, d.names[c[0]]),
        })),
      });
      if (markOpen) open.add(l.path);
    }
    return d.levels;
  }

  async function fetchLevels(path, levels) {
    const q = query();
    if (path) q.set('path', path);
    if (levels) q.set('open', String(levels));
    return api('calltree', q);
  }
  function query() {
    const q = sel();
    if (state.rev === '1') q.set('reverse', '1');
    return q;
  }

  // Makes sure every ancestor of path has its children here and is open.
  async function openTo(path) {
    const names = splitPath(path);
    for (let i = 0; i < names.length; i++) {
      const p = joinPath(names.slice(0, i));
      if (!kids.has(p)) take(await fetchLevels(p, 0), false);
      open.add(p);
    }
  }

  async function render(gen) {
    const k = query().toString();
    $('ct-reverse').checked = state.rev === '1';
    if (k !== key) {
      const d = await fetchLevels('', HOT);
      if (gen !== generation) return;
      key = k; kids = new Map(); open = new Set();
      const levels = take(d, true);
      const last = levels[levels.length - 1];
      const first = kids.get(last.path).children[0];
      hotEnd = first ? first.path : '';
    }
    chosen = state.ct || hotEnd;
    if (chosen) {
      try { await openTo(chosen); } catch (e) { chosen = hotEnd; }
      if (gen !== generation) return;
    }
    draw();
  }

  function pct(v) { return total > 0 ? (100 * v / total).toFixed(2) + '%' : ''; }

  function draw() {
    const body = $('ct-table').tBodies[0];
    rows = [];
    const out = [];
    const walk = (path, depth) => {
      const k = kids.get(path);
      if (!k) return;
      for (const n of k.children) {
        rows.push(n);
        out.push(row(n, depth));
        if (open.has(n.path)) walk(n.path, depth + 1);
      }
      if (k.more) {
        const tr = document.createElement('tr');
        tr.className = 'more';
        tr.innerHTML = `<td class="num">${fmtValue(k.moreTotal, unit)}</td><td class="num">${pct(k.moreTotal)}</td><td></td><td></td><td></td>`;
        const td = document.createElement('td');
        td.style.paddingLeft = `${depth * 16 + 20}px`;
        td.textContent = `${k.more} more, each smaller`;
        tr.appendChild(td);
        out.push(tr);
      }
    };
    walk('', 0);
    body.replaceChildren(...out);
    $('ct-empty').hidden = rows.length > 0;
    $('ct-empty').textContent = 'no samples in this selection';
    $('ct-summary').textContent = `${state.rev === '1' ? 'inverted' : 'top-down'} · total ${fmtValue(total, unit)}`;
    const s = body.querySelector('tr.sel');
    if (s && document.activeElement === $('ct-table')) s.scrollIntoView({ block: 'nearest' });
  }

  function row(n, depth) {
    const tr = document.createElement('tr');
    tr.dataset.path = n.path;
    if (n.path === chosen) tr.classList.add('sel');
    const cells = [fmtValue(n.total, unit), pct(n.total), n.self ? fmtValue(n.self, unit) : '—', n.self ? pct(n.self) : '', String(n.nkids || '')];
    for (const [i, t] of cells.entries()) {
      const td = document.createElement('td');
      td.className = 'num';
      if (i === 4) td.className = 'num kids';
      td.textContent = t;
      tr.appendChild(td);
    }
    const td = document.createElement('td');
    td.className = 'name';
    td.style.paddingLeft = `${depth * 16 + 4}px`;
    const tw = document.createElement('span');
    tw.className = 'twisty';
    tw.textContent = n.nkids ? (open.has(n.path) ? '▾' : '▸') : ' ';
    td.append(tw, n.name);
    td.title = `${n.name}${n.file ? `\n${n.file}${n.line ? ':' + n.line : ''}` : ''}${n.module ? `\n${n.module}` : ''}`;
    tr.appendChild(td);
    return tr;
  }

  // Selection: the URL is replaced, not pushed (one entry per move would
  // bury Back); nothing is fetched.
  function select(path) {
    chosen = path;
    state.ct = path;
    const q = new URLSearchParams();
    for (const k of Object.keys(DEFAULTS)) if (state[k] !== DEFAULTS[k]) q.set(k, state[k]);
    history.replaceState(null, '', '#' + q.toString());
    shownHash = location.hash;
    draw();
  }

  async function toggle(path, deep) {
    const n = rows.find((r) => r.path === path);
    if (!n || !n.nkids) return;
    if (open.has(path) && !deep) { open.delete(path); draw(); return; }
    try {
      if (deep) take(await fetchLevels(path, HOT), true);
      else if (!kids.has(path)) take(await fetchLevels(path, 0), false);
      open.add(path);
      showError('');
    } catch (e) { showError(e.message); }
    draw();
  }

  function key_(e) {
    const i = rows.findIndex((r) => r.path === chosen);
    const n = rows[i];
    const act = {
      ArrowDown: () => i + 1 < rows.length && select(rows[i + 1].path),
      ArrowUp: () => i > 0 && select(rows[i - 1].path),
      Home: () => rows.length && select(rows[0].path),
      End: () => rows.length && select(rows[rows.length - 1].path),
      ArrowRight: () => {
        if (!n || !n.nkids) return;
        if (!open.has(n.path)) toggle(n.path, false);
        else if (rows[i + 1]) select(rows[i + 1].path);
      },
      ArrowLeft: () => {
        if (!n) return;
        if (open.has(n.path)) { open.delete(n.path); draw(); } else if (splitPath(n.path).length > 1) select(parentPath(n.path));
      },
      Enter: () => n && toggle(n.path, false),
      '*': () => n && toggle(n.path, true),
      s: () => n && setState({ v: 'sandwich', fn: n.name }),
      m: () => n && Transforms.add('mf', [n.name]),
      ContextMenu: () => { const tr = $('ct-table').querySelector('tr.sel'); if (n && tr) { const r = tr.getBoundingClientRect(); menu(n, r.left + 40, r.bottom); } },
    };
    if (act[e.key]) { e.preventDefault(); act[e.key](); }
  }

  // ---- the context menu: the stack transforms (transforms.js: tf= in
  // the URL, applied by the server to every view), then this view's own ----
  const MENU = [
    ['flame', 'Show in the flame graph',
      (n) => setState({ v: 'flame', root: state.rev === '1' ? '' : n.path })],
    ['sandwich', 'Sandwich (callers and callees)', (n) => setState({ v: 'sandwich', fn: n.name })],
    ['disasm', 'Disassemble (instructions and their samples)', (n) => setState({ v: 'disasm', fn: n.name })],
    ['open', 'Open the hot path below (*)', (n) => toggle(n.path, true)],
  ];
  const tfNode = (n) => ({ name: n.name, names: state.rev === '1' ? null : splitPath(n.path), module: n.module });
  function menu(n, x, y) {
    const m = $('ct-menu');
    const entries = [...Transforms.items(tfNode(n)), ...MENU.map(([id, text, act]) => [id, text, () => act(n)])];
    m.replaceChildren(...entries.map(([id, text, act]) => {
      const a = document.createElement('a');
      a.dataset.act = id;
      a.textContent = text;
      a.tabIndex = 0;
      a.addEventListener('click', () => { closeMenu(); act(); });
      a.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); a.click(); } });
      return a;
    }));
    m.hidden = false;
    // Inside the window: flipped left or up where it would overflow.
    const w = m.offsetWidth, h = m.offsetHeight;
    m.style.left = `${Math.max(0, x + w > innerWidth ? x - w : x)}px`;
    m.style.top = `${Math.max(0, y + h > innerHeight ? y - h : y)}px`;
    m.firstChild.focus();
  }
  function closeMenu() {
    if ($('ct-menu').hidden) return;
    $('ct-menu').hidden = true;
    $('ct-table').focus();
  }

  function wire() {
    const t0 = $('ct-table');
    t0.addEventListener('contextmenu', (e) => {
      const tr = e.target.closest('tr[data-path]');
      if (!tr) return;
      e.preventDefault();
      select(tr.dataset.path);
      const n = rows.find((r) => r.path === tr.dataset.path);
      if (n) menu(n, e.clientX, e.clientY);
    });
    $('ct-menu').addEventListener('keydown', (e) => {
      const items = [...$('ct-menu').children];
      const i = items.indexOf(document.activeElement);
      if (e.key === 'Escape') closeMenu();
      else if (e.key === 'ArrowDown') items[(i + 1) % items.length].focus();
      else if (e.key === 'ArrowUp') items[(i + items.length - 1) % items.length].focus();
      else return;
      e.preventDefault();
      e.stopPropagation();
    });
    document.addEventListener('click', (e) => { if (!$('ct-menu').contains(e.target)) closeMenu(); });
    $('ct-reverse').addEventListener('change', (e) => setState({ rev: e.target.checked ? '1' : '0', ct: '' }));
    const t = $('ct-table');
    t.addEventListener('keydown', key_);
    t.addEventListener('click', (e) => {
      const tr = e.target.closest('tr[data-path]');
      if (!tr) return;
      if (e.target.classList.contains('twisty')) toggle(tr.dataset.path, false);
      else select(tr.dataset.path);
      t.focus();
    });
    t.addEventListener('dblclick', (e) => {
      const tr = e.target.closest('tr[data-path]');
      if (tr) toggle(tr.dataset.path, false);
    });
  }

  return { render, wire };
})();
