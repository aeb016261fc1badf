// SPDX-License-Identifier: Apache-2.0
// kiln serve's stack transforms: one ordered list in the URL (tf=), which
// the server applies to the selection's stacks before any view aggregates
// them (profile/transform.c), so the flame graph, icicle, call tree, top,
// sandwich, call graph, source, timeline and downloads all show the
// transformed profile.  Here: the list read and written (the server's text
// form: CODE:ARG items, ';' between them, '/' between a path's names, '\'
// before a ';', '/' or '\' inside a name), the breadcrumbs that show it
// (click one: back to that point; ×: remove that one), and the context
// menu the flame graph and the call tree open on a frame.  Uses app.js's
// globals (state, setState, splitPath, flame); loaded before it, run
// after it.
'use strict';

const Transforms = (() => {
  const WORDS = {
    f: 'focus on subtree', ff: 'focus on function', mf: 'merge', mcn: 'merge call node',
    df: 'drop', cl: 'collapse library', rec: 'collapse recursion', drec: 'collapse direct recursion',
  };
  const PATH = new Set(['f', 'mcn']);
  const esc = (s) => s.replace(/[\\;/]/g, '\\$&');

  // The list: [{ code, names }] from the text form.
  function parse(text) {
    const out = [];
    if (!text) return out;
    let cur = null, name = '', code = '';
    const end = () => { if (cur) { cur.names.push(name); out.push(cur); } cur = null; name = ''; code = ''; };
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (!cur) {
        if (ch === ':') { cur = { code, names: [] }; continue; }
        if (ch === ';') { code = ''; continue; }
        code += ch;
        continue;
      }
      if (ch === '\\' && i + 1 < text.length) name += text[++i];
      else if (ch === ';') end();
      else if (ch === '/' && PATH.has(cur.code)) { cur.names.push(name); name = ''; }
      else name += ch;
    }
    end();
    return out;
  }
  const text = (items) => items.map((t) => `${t.code}:${t.names.map(esc).join('/')}`).join(';');

  function set(items) { setState({ tf: text(items), root: '', ct: '' }); }
  function add(code, names) { set([...parse(state.tf), { code, names }]); }

  // The breadcrumbs: "complete profile › merge: f › ...".
  function render() {
    const items = parse(state.tf);
    const bar = $('tf-bar');
    bar.hidden = !items.length;
    const nav = $('tf-crumbs');
    nav.replaceChildren();
    const crumb = (label, keep, title) => {
      const a = document.createElement('a');
      a.textContent = label;
      a.title = title;
      if (!OFFLINE) a.addEventListener('click', () => set(items.slice(0, keep)));
      return a;
    };
    nav.append(crumb('complete profile', 0, 'every transform off'));
    items.forEach((t, i) => {
      const s = document.createElement('span'); s.className = 'sep'; s.textContent = '›';
      const chip = document.createElement('span');
      chip.className = 'chip';
      chip.dataset.tf = `${t.code}:${t.names.join('/')}`;
      chip.append(crumb(`${WORDS[t.code] || t.code}: ${t.names.join(' › ')}`, i + 1,
        'back to this point (the transforms after it go)'));
      if (!OFFLINE) {
        const x = document.createElement('a');
        x.textContent = '×'; x.className = 'x'; x.title = 'remove this transform only';
        x.addEventListener('click', () => set(items.filter((_, k) => k !== i)));
        chip.append(x);
      }
      nav.append(s, chip);
    });
  }

  // The transforms offered for a frame: node { name, names (the path from
  // the root, or null in an inverted view), module (its file, or '') }.
  function items(node) {
    const out = [
      ['mf', `Merge function ${node.name} (its time goes to its callers)`, () => add('mf', [node.name])],
    ];
    if (node.names) out.push(['mcn', 'Merge this call node only', () => add('mcn', node.names)]);
    if (node.names) out.push(['f', 'Focus on this subtree (every view)', () => add('f', node.names)]);
    out.push(['ff', `Focus on function ${node.name} (every view)`, () => add('ff', [node.name])]);
    const lib = (node.module || '').replace(/^.*\//, '');
    if (lib) out.push(['cl', `Collapse library ${lib} into one frame`, () => add('cl', [lib])]);
    out.push(['rec', 'Collapse recursion', () => add('rec', [node.name])],
      ['drec', 'Collapse direct recursion only', () => add('drec', [node.name])],
      ['df', `Drop samples with ${node.name}`, () => add('df', [node.name])]);
    return out;
  }

  // A menu at (x, y) of entries [id, text, action]; focus on its first.
  function menu(entries, x, y) {
    const m = $('tf-menu');
    m.replaceChildren(...entries.map(([id, label, act]) => {
      const a = document.createElement('a');
      a.dataset.act = id; a.textContent = label; a.tabIndex = 0;
      a.addEventListener('click', () => { close(); act(); });
      a.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); a.click(); } });
      return a;
    }));
    m.hidden = false;
    const w = m.offsetWidth, h = m.offsetHeight;
    m.style.left = `${Math.max(0, x + w > innerWidth ? x - w : x)}px`;
    m.style.top = `${Math.max(0, y + h > innerHeight ? y - h : y)}px`;
    m.firstChild.focus();
  }
  function close() { $('tf-menu').hidden = true; }

  // The flame graph's (and icicle's) frame as a node for items().
  function flameNode(i) {
    const n = flame.nodes[i];
    if (!n || n[0] < 0) return null;        // "all"
    const names = state.rev === '1' ? null : [...splitPath(state.root), ...flame.path(i).slice(1)];
    return { name: flame.name(i), names, module: n[6] >= 0 ? flame.names[n[6]] : '' };
  }

  function wire() {
    // A saved page keeps its selection: no menu there, and its help says so.
    if (OFFLINE)
      for (const h of document.querySelectorAll('#flame-view .help'))
        h.textContent = h.textContent.replace(' · right-click: transforms, disassembly', '');
    $('flame').addEventListener('contextmenu', (e) => {
      if (OFFLINE) return;
      const i = flame.at(e);
      const node = i >= 0 ? flameNode(i) : null;
      if (!node) return;
      e.preventDefault();
      menu([...items(node),
        ['sandwich', 'Sandwich (callers and callees)', () => setState({ v: 'sandwich', fn: node.name })],
        ['disasm', 'Disassemble (instructions and their samples)', () => setState({ v: 'disasm', fn: node.name })]],
      e.clientX, e.clientY);
    });
    $('tf-menu').addEventListener('keydown', (e) => {
      const all = [...$('tf-menu').children];
      const i = all.indexOf(document.activeElement);
      if (e.key === 'Escape') close();
      else if (e.key === 'ArrowDown') all[(i + 1) % all.length].focus();
      else if (e.key === 'ArrowUp') all[(i + all.length - 1) % all.length].focus();
      else return;
      e.preventDefault();
      e.stopPropagation();
    });
    document.addEventListener('click', (e) => { if (!$('tf-menu').contains(e.target)) close(); });
  }

  return { render, wire, items, menu, add, parse, text };
})();
