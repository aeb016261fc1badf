// SPDX-License-Identifier: Apache-2.0
// kiln serve's page: moving about the call graph (issue 26, item 7).  The
// graph (graphviz's SVG) sits in a fixed box: the wheel zooms around the
// pointer, a drag pans, and "fit" shows the whole graph only as far as
// its text stays readable (otherwise the top of the graph, where the
// roots are, at the smallest readable size).  A click on a function opens
// its menu: focus, ignore, hide (the selection's regexes, anchored to the
// name), show from (focus on function, when the page has transforms) and
// sandwich.
'use strict';

const CgNav = (() => {
  const MIN_TEXT_PX = 9;        // graphviz's text drawn at least this tall
  let svg = null, vb0 = null, vb = null, fontPt = 14;

  // A name as a POSIX ERE that matches it alone.
  const ereQuote = (s) => '^' + s.replace(/[.[\]()*+?{}|^$\\]/g, '\\$&') + '$';

  function apply() {
    svg.setAttribute('viewBox', vb.join(' '));
    $('cg').dataset.scale = String(scale().toFixed(4));
  }
  const box = () => $('cg').getBoundingClientRect();
  const scale = () => box().width / vb[2];     // screen px per SVG unit

  // Shows the graph: the whole of it if its text stays readable, else
  // the top at the smallest readable scale (fit) or at full size.
  function attach(el, fit) {
    svg = el;
    const v = (svg.getAttribute('viewBox') || '').trim().split(/[\s,]+/).map(Number);
    const w = parseFloat(svg.getAttribute('width')) || v[2], h = parseFloat(svg.getAttribute('height')) || v[3];
    vb0 = v.length === 4 && v.every(Number.isFinite) ? v : [0, 0, w, h];
    // The smallest text (graphviz sizes a node's by its self value).
    const sizes = [...svg.querySelectorAll('text')].map((t) => parseFloat(t.getAttribute('font-size'))).filter((x) => x > 0);
    fontPt = sizes.length ? Math.min(...sizes) : 14;
    svg.removeAttribute('width'); svg.removeAttribute('height');
    svg.setAttribute('preserveAspectRatio', 'xMinYMin meet');
    svg.style.width = '100%'; svg.style.height = '100%';
    const B = box(), readable = MIN_TEXT_PX / fontPt;    // px per unit
    let s = fit ? Math.min(B.width / vb0[2], B.height / vb0[3]) : 1;
    if (s < readable) s = readable;
    vb = [vb0[0], vb0[1], B.width / s, B.height / s];
    // Centred when it all fits.
    if (vb[2] > vb0[2]) vb[0] = vb0[0] - (vb[2] - vb0[2]) / 2;
    apply();
    for (const a of svg.querySelectorAll('a[data-fn]'))
      a.addEventListener('click', (e) => { e.preventDefault(); if (!dragged) menu(e, a.dataset.fn); });
  }

  let drag = null, dragged = false;
  function wire() {
    const c = $('cg');
    c.addEventListener('wheel', (e) => {
      if (!svg) return;
      e.preventDefault();
      const B = box(), fx = (e.clientX - B.left) / B.width, fy = (e.clientY - B.top) / B.height;
      const k = Math.exp(Math.max(-1, Math.min(1, e.deltaY / 300)));
      const nw = Math.min(Math.max(vb[2] * k, vb0[2] / 50), vb0[2] * 20), nh = nw * B.height / B.width;
      vb = [vb[0] + fx * (vb[2] - nw), vb[1] + fy * (vb[3] - nh), nw, nh];
      apply();
    }, { passive: false });
    c.addEventListener('mousedown', (e) => {
      if (!svg || e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, vb: vb.slice() }; dragged = false;
      e.preventDefault();
    });
    window.addEventListener('mousemove', (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!dragged && Math.hypot(dx, dy) < 4) return;
      dragged = true;
      const s = scale();
      vb = [drag.vb[0] - dx / s, drag.vb[1] - dy / s, vb[2], vb[3]];
      apply();
    });
    window.addEventListener('mouseup', () => { drag = null; setTimeout(() => { dragged = false; }, 0); });
    document.addEventListener('mousedown', (e) => { if (!e.target.closest('#cg-menu')) $('cg-menu').hidden = true; });
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape') $('cg-menu').hidden = true; });
  }

  function menu(e, fn) {
    if (OFFLINE) return;        // a saved page has one selection only
    const m = $('cg-menu'), items = [
      ['focus', `keep only the stacks through ${fn}`, () => setState({ focus: ereQuote(fn), root: '' })],
      ['ignore', `drop the stacks through ${fn}`, () => setState({ ignore: ereQuote(fn), root: '' })],
      ['hide', `remove ${fn}'s frames from every stack`, () => setState({ hide: ereQuote(fn), root: '' })],
    ];
    // Show from: the transforms' focus on function (tf=ff:NAME), where
    // the page has them.
    if ('tf' in DEFAULTS) {
      const esc = fn.replace(/[\\;/]/g, '\\$&');
      items.push(['show from', `${fn} as the root: its callers go`,
        () => setState({ tf: (state.tf ? state.tf + ';' : '') + 'ff:' + esc })]);
    }
    if (!OFFLINE) items.push(['sandwich', `callers and callees of ${fn}`, () => setState({ v: 'sandwich', fn })]);
    m.replaceChildren(...items.map(([name, title, act]) => {
      const b = document.createElement('button');
      b.textContent = name; b.title = title; b.dataset.act = name; b.setAttribute('role', 'menuitem');
      b.addEventListener('click', () => { m.hidden = true; act(); });
      return b;
    }));
    const h = document.createElement('div'); h.className = 'menu-head'; h.textContent = fn;
    m.prepend(h);
    m.hidden = false;
    m.style.left = Math.min(e.clientX, window.innerWidth - m.offsetWidth - 4) + 'px';
    m.style.top = Math.min(e.clientY, window.innerHeight - m.offsetHeight - 4) + 'px';
  }

  return { attach, wire, ereQuote };
})();
