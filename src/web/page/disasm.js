// SPDX-License-Identifier: Apache-2.0
// kiln serve's disassembly view: a function's instructions (/api/disasm:
// decoded by the server from the binary the profile mapped, its build ID
// checked) with the selection's self and total time at each, and the
// source line each comes from above the instructions of that line.  The
// function is the URL's fn= (shared with the sandwich and source views);
// it is opened from the flame graph's and call tree's context menus and
// from the source view.  Uses app.js's globals (state, api, sel,
// setState, fmtValue); loaded before it, run after it.
'use strict';

const Disasm = (() => {
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const share = (v, t) => (t > 0 && v ? (100 * v / t).toFixed(2) + '%' : '');

  async function render(gen) {
    if (document.activeElement !== $('da-fn')) $('da-fn').value = state.fn;
    const body = $('da-table').tBodies[0];
    if (!state.fn) {
      body.replaceChildren();
      $('da-summary').textContent = 'name a function, or open one from a context menu or the source view';
      return;
    }
    const q = sel();
    q.set('fn', state.fn);
    const d = await api('disasm', q);
    if (gen !== generation) return;
    let max = 1;
    for (const i of d.insns) if (i[2] > max) max = i[2];
    const rows = [];
    let last = '';
    for (const [addr, text, self, total, file, line] of d.insns) {
      const key = `${file}:${line}`;
      if (file >= 0 && key !== last) {
        const src = d.sources[file];
        const t = src && src.lines[line];
        const tr = el('tr', 'srcline');
        tr.append(el('td'), el('td'), el('td'),
          el('td', 'num', `${src ? src.file.replace(/^.*\//, '') : '?'}:${line}`),
          el('td', 'text', t === undefined ? '' : t));
        rows.push(tr);
      }
      last = key;
      const tr = el('tr', 'insn');
      tr.dataset.addr = addr;
      if (self > 0) tr.style.background = `rgba(179,70,27,${(0.08 + 0.5 * self / max).toFixed(3)})`;
      tr.append(el('td', 'num', self ? fmtValue(self, d.unit) : ''),
        el('td', 'num', share(self, d.self)),
        el('td', 'num', total ? fmtValue(total, d.unit) : ''),
        el('td', 'num addr', addr), el('td', 'text', text));
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    const base = d.file.replace(/^.*\//, '');
    $('da-summary').textContent = `${d.symbol} in ${base} (${d.arch}, ${d.start}–${d.end}` +
      (d.build_id ? `, build ID ${d.build_id.slice(0, 12)}…` : '') + `): self ${fmtValue(d.self, d.unit)}` +
      ` (${share(d.self, d.total) || '0.00%'} of the selection), total ${fmtValue(d.cum, d.unit)}` +
      (d.elsewhere_self || d.elsewhere_cum ? ` · ${fmtValue(d.elsewhere_cum, d.unit)} at addresses of another file or outside the symbol` : '') +
      (d.truncated ? ' · cut: the function is longer than shown' : '');
  }

  function wire() {
    $('da-fn').addEventListener('change', (e) => setState({ fn: e.target.value }));
    $('src-disasm').addEventListener('click', () => setState({ v: 'disasm' }));
  }

  return { render, wire };
})();
