// SPDX-License-Identifier: Apache-2.0
// kiln serve's label filter bar: every label the selection's samples carry
// (pid, thread, thread_name, comm, a pprof's own labels; /api/labels sends
// each with its values by total), a value kept or dropped, and one label
// to group by (the flame graph, call tree and every view then start with a
// frame per value).  State: lf= (conditions "KEY=VALUE" or "KEY!=VALUE",
// ';' between them, '\;' and '\\' inside, as the server reads them) and
// g= (the key) in the URL; sel() sends them as labels= and group=.  Uses
// app.js's globals; loaded before it, run after it.
'use strict';

const Labels = (() => {
  let key = null;               // the selection the keys below are of
  let keys = [];                // [{ key, values: [[text, total]], more }]
  let unit = '';

  const esc = (s) => s.replace(/\\/g, '\\\\').replace(/;/g, '\\;');
  const conds = () => splitPath(state.lf).map((c) => {
    const i = c.indexOf('=');
    const ex = i > 0 && c[i - 1] === '!';
    return { key: c.slice(0, ex ? i - 1 : i), value: c.slice(i + 1), exclude: ex, raw: c };
  });
  const condText = (c) => `${c.key}${c.exclude ? '≠' : '='}${c.value}`;

  function add(exclude) {
    const k = $('lb-key').value, v = $('lb-value').value;
    if (!k || v === '') return;
    const c = `${esc(k)}${exclude ? '!=' : '='}${esc(v)}`;
    setState({ lf: state.lf ? `${state.lf};${c}` : c, root: '', ct: '' });
  }
  function remove(i) {
    const cs = splitPath(state.lf);
    cs.splice(i, 1);
    setState({ lf: joinPath(cs), root: '', ct: '' });
  }

  async function render(gen) {
    if (OFFLINE) { $('labels-bar').hidden = true; return; }
    const q = sel();
    const k = q.toString();
    if (k !== key) {
      const d = await api('labels', q);
      if (gen !== generation) return;
      key = k; keys = d.keys; unit = d.unit;
    }
    draw();
  }

  function draw() {
    const cs = conds();
    $('labels-bar').hidden = !keys.length && !cs.length && !state.g;
    const ks = $('lb-key');
    const cur = ks.value;
    ks.replaceChildren(...keys.map((x) => new Option(x.key, x.key)));
    if (keys.some((x) => x.key === cur)) ks.value = cur;
    fillValues();
    const gs = $('lb-group');
    const gkeys = new Set(keys.map((x) => x.key));
    if (state.g) gkeys.add(state.g);
    gs.replaceChildren(new Option('nothing', ''), ...[...gkeys].map((x) => new Option(x, x)));
    gs.value = state.g;
    $('lb-chips').replaceChildren(...cs.map((c, i) => {
      const s = document.createElement('span');
      s.className = `chip${c.exclude ? ' drop' : ''}`;
      s.textContent = condText(c);
      const x = document.createElement('a');
      x.textContent = '×';
      x.title = 'remove this condition';
      x.addEventListener('click', () => remove(i));
      s.appendChild(x);
      return s;
    }));
  }

  function fillValues() {
    const k = keys.find((x) => x.key === $('lb-key').value);
    const vs = $('lb-value');
    vs.replaceChildren(...(k ? k.values.map(([v, t]) => new Option(`${v} (${fmtValue(t, unit)})`, v)) : []));
    if (k && k.more) vs.appendChild(new Option(`(${k.more} more)`, '')).disabled = true;
  }

  function wire() {
    $('lb-key').addEventListener('change', fillValues);
    $('lb-keep').addEventListener('click', () => add(false));
    $('lb-drop').addEventListener('click', () => add(true));
    $('lb-group').addEventListener('change', (e) => setState({ g: e.target.value, root: '', ct: '' }));
  }

  return { render, wire };
})();
