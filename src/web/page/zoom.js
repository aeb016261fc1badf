// SPDX-License-Identifier: Apache-2.0
// kiln serve's page: wheel and drag zoom with a minimap (issue 26, item
// 7), shared by the flame graph, the icicle and the stack chart.  A
// window is [a, b], fractions of what the view spans; the view redraws
// at once from what it holds (scaled), and asks the server again for the
// new window a moment later (the URL keeps the window).
'use strict';

const Zoom = (() => {
  const MIN_SPAN = 1e-7;        // the narrowest window, of the whole

  // Clamps a window into [0, 1], at least `min` wide.
  function clamp(a, b, min) {
    const m = Math.max(min || MIN_SPAN, MIN_SPAN);
    let w = Math.min(Math.max(b - a, m), 1);
    a = Math.min(Math.max(a, 0), 1 - w);
    return [a, a + w];
  }

  // Wheel: zoom around the pointer (deltaY), pan (deltaX or shift);
  // drag: pan.  get() -> [a, b]; set(a, b, done): done is false while the
  // gesture goes on (redraw from what is held) and true when it settles
  // (ask the server).  A press that does not move stays a click.
  function attach(canvas, get, set, opts = {}) {
    const left = opts.left || 0;              // pixels before the chart
    let settle = 0, drag = null, moved = false;
    const width = () => canvas.clientWidth - left;
    const later = () => { clearTimeout(settle); settle = setTimeout(() => { const w = get(); set(w[0], w[1], true); }, 150); };
    canvas.addEventListener('wheel', (e) => {
      const [a, b] = get(), w = b - a, x = e.clientX - canvas.getBoundingClientRect().left - left;
      const f = Math.min(Math.max(x / width(), 0), 1);
      let na = a, nb = b;
      const dx = e.shiftKey ? e.deltaY : e.deltaX, dy = e.shiftKey ? 0 : e.deltaY;
      if (Math.abs(dy) >= Math.abs(dx)) {
        const k = Math.exp(Math.max(-1, Math.min(1, dy / 300)));
        const nw = w * k;
        na = a + f * (w - nw); nb = na + nw;
      } else {
        na = a + dx / width() * w; nb = na + w;
      }
      e.preventDefault();
      const c = clamp(na, nb, opts.min && opts.min());
      set(c[0], c[1], false);
      later();
    }, { passive: false });
    canvas.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      drag = { x: e.clientX, win: get() }; moved = false;
    });
    window.addEventListener('mousemove', (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      if (!moved && Math.abs(dx) < 4) return;
      moved = true;
      const [a, b] = drag.win, w = b - a;
      const c = clamp(a - dx / width() * w, b - dx / width() * w, 0);
      set(c[0], c[1], false);
    });
    window.addEventListener('mouseup', () => {
      if (!drag) return;
      drag = null;
      if (moved) { const w = get(); set(w[0], w[1], true); }
    });
    // A drag is not a click: the view's click handler asks this first.
    canvas.addEventListener('click', (e) => { if (moved) { e.stopImmediatePropagation(); moved = false; } }, true);
  }

  // The minimap: the whole view drawn small (draw(g, w, h)), the window
  // shaded around; a drag across it picks a window, a click centres it.
  class Minimap {
    constructor(canvas, onWindow) {
      this.c = canvas; this.onWindow = onWindow; this.win = [0, 1]; this.paint = null;
      const x = (e) => Math.min(Math.max((e.clientX - canvas.getBoundingClientRect().left) / canvas.clientWidth, 0), 1);
      let d = null;
      canvas.addEventListener('mousedown', (e) => { d = { x0: x(e) }; e.preventDefault(); });
      window.addEventListener('mousemove', (e) => {
        if (!d) return;
        d.x1 = x(e);
        this.draw([Math.min(d.x0, d.x1), Math.max(d.x0, d.x1)]);
      });
      window.addEventListener('mouseup', (e) => {
        if (!d) return;
        const x1 = d.x1 === undefined ? d.x0 : d.x1, x0 = d.x0;
        d = null;
        let w;
        if (Math.abs(x1 - x0) * canvas.clientWidth >= 3) w = clamp(Math.min(x0, x1), Math.max(x0, x1));
        else { const s = this.win[1] - this.win[0]; w = clamp(x0 - s / 2, x0 + s / 2); }
        this.onWindow(w[0], w[1]);
      });
      canvas.addEventListener('dblclick', () => this.onWindow(0, 1));
    }

    // paint(g, w, h) draws the overview; it is drawn once per size into
    // a bitmap kept here, so that moving the window only copies it.
    set(paint) { this.paint = paint; this.shot = null; this.draw(); }
    show(a, b) { this.win = [a, b]; this.draw(); }

    draw(sel) {
      const c = this.c, dpr = window.devicePixelRatio || 1, w = c.clientWidth, h = c.clientHeight;
      if (!w || !h) return;
      const W = Math.round(w * dpr), H = Math.round(h * dpr);
      if (c.width !== W || c.height !== H) { c.width = W; c.height = H; }
      if (this.paint && (!this.shot || this.shot.width !== W || this.shot.height !== H)) {
        this.shot = document.createElement('canvas');
        this.shot.width = W; this.shot.height = H;
        const o = this.shot.getContext('2d');
        o.setTransform(dpr, 0, 0, dpr, 0, 0);
        this.paint(o, w, h);
      }
      const g = c.getContext('2d');
      g.setTransform(1, 0, 0, 1, 0, 0);
      g.clearRect(0, 0, W, H);
      if (this.shot) g.drawImage(this.shot, 0, 0);
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      const [a, b] = sel || this.win;
      g.fillStyle = 'rgba(0,0,0,0.25)';
      g.fillRect(0, 0, a * w, h);
      g.fillRect(b * w, 0, w - b * w, h);
      g.strokeStyle = '#000'; g.lineWidth = 1;
      g.strokeRect(a * w + 0.5, 0.5, Math.max((b - a) * w - 1, 1), h - 1);
      c.dataset.window = `${a.toFixed(6)},${b.toFixed(6)}`;
    }
  }

  // A window from the URL ("a,b"), or [0, 1].
  function parse(s) {
    const m = /^([0-9.e-]+),([0-9.e-]+)$/.exec(s || '');
    if (!m) return [0, 1];
    const a = +m[1], b = +m[2];
    return Number.isFinite(a) && Number.isFinite(b) && b > a ? clamp(a, b) : [0, 1];
  }
  const format = (a, b) => (a <= 0 && b >= 1 ? '' : `${+a.toPrecision(9)},${+b.toPrecision(9)}`);

  return { attach, Minimap, clamp, parse, format };
})();

// The flame graph's and icicle's zoom: the window (fx in the URL) within
// the zoom root, sent as x0 and x1 so that the server sends only the
// nodes in it at the window's resolution; the minimap draws the zoom
// root's whole graph (one more small request, kept per selection).  The
// left-heavy order (lh=1) goes with every request.
const FlameNav = (() => {
  let graph = null, mini = null, miniKey = '', miniData = null;

  function params(q) {
    const [a, b] = Zoom.parse(state.fx);
    if (a > 0 || b < 1) { q.set('x0', String(a)); q.set('x1', String(b)); }
    if (state.lh === '1') q.set('heavy', '1');
  }

  function paintMini(g, w, h) {
    const d = miniData;
    if (!d || !d.nodes.length) return;
    const T = d.nodes[0][3] || 1, rows = Math.max(d.depth + 1, 1), rh = h / rows;
    const up = state.v === 'flame';
    for (const n of d.nodes) {
      const x = n[2] / T * w, ww = n[3] / T * w;
      if (ww < 0.5) continue;
      g.fillStyle = n[0] < 0 ? 'rgb(200,200,200)' : colour(n[10], 0);
      g.fillRect(x, up ? h - (n[1] + 1) * rh : n[1] * rh, Math.max(ww - 0.3, 0.5), Math.max(rh - 0.3, 0.5));
    }
  }

  // After the flame graph is drawn: the minimap of its zoom root.
  async function drawn(gen) {
    const box = $('flame-mini');
    if (OFFLINE) { box.hidden = true; return; }
    box.hidden = false;
    const q = sel();
    q.set('width', String(Math.max(1, box.clientWidth)));
    if (state.root) q.set('root', state.root);
    if (state.rev === '1') q.set('reverse', '1');
    if (state.lh === '1') q.set('heavy', '1');
    q.set('min', '1');
    const key = q.toString();
    if (key !== miniKey) {
      const d = await api('flame', q);
      if (gen !== generation) return;
      miniData = d; miniKey = key;
    }
    // Repainted for a new answer, or flame <-> icicle (roots down or up).
    if (mini.paintKey !== miniKey + state.v) { mini.paintKey = miniKey + state.v; mini.set(paintMini); }
    const [a, b] = Zoom.parse(state.fx);
    mini.show(a, b);
  }

  function setWin(a, b, done) {
    graph.win = [a, b];
    graph.draw();
    mini.show(a, b);
    if (done) setState({ fx: Zoom.format(a, b) }, true);
  }

  function wire(g) {
    graph = g;
    mini = new Zoom.Minimap($('flame-mini'), (a, b) => setWin(a, b, true));
    // A saved page holds one drawing of the whole graph: no window.
    if (!OFFLINE) Zoom.attach(g.c, () => g.win || [0, 1], setWin);
    $('heavy').addEventListener('change', (e) => setState({ lh: e.target.checked ? '1' : '0' }));
  }

  return { params, drawn, wire };
})();
