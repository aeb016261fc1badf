// SPDX-License-Identifier: Apache-2.0
// kiln serve's summary view: what the profile says about itself (command
// line, host, event and period, duration, samples and lost, processes and
// threads, the inputs, kiln's version), what the current selection holds,
// and for a kiln heap trace heaptrack_gui's summary (calls, temporary, peak
// and when, leaked).  The server reads it all (/api/summary); this draws a
// list.  Uses app.js's globals; loaded before it, run after it.
'use strict';

const Summary = (() => {
  const sec = (ns) => fmtValue(ns, 'nanoseconds');
  const num = (v) => (v === null || v === undefined ? 'not recorded' : Number(v).toLocaleString('en-US'));

  function section(title, items) {
    const h = document.createElement('h3');
    h.textContent = title;
    const dl = document.createElement('dl');
    for (const [k, v, id] of items) {
      if (v === undefined) continue;
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      if (id) dd.id = `sum-${id}`;
      dl.append(dt, dd);
    }
    return [h, dl];
  }

  function census(c, unit) {
    return [
      ['records', `${num(c.records)} (distinct stacks, labels and times)`],
      ['processes', c.processes ? num(c.processes) : 'not recorded'],
      ['threads', c.threads ? num(c.threads) : 'not recorded'],
      ['time span', c.time_span ? `${sec(c.time_span[0])} – ${sec(c.time_span[1])} after the start` : 'no sample times'],
    ];
  }

  async function render(gen) {
    const d = await api('summary', sel());
    if (gen !== generation) return;
    const ev = (d.event ? `${d.event} · ` : '') +
      (d.period_type ? `${d.period_type} (${d.period_unit})` : d.types.map((t) => t.type).join(', '));
    let period = d.period ? `${fmtValue(d.period, d.period_unit)}` : 'not recorded';
    if (d.period && d.period_unit === 'nanoseconds') period += ` (${Math.round(1e9 / d.period)} Hz)`;
    const out = [
      ...section('Profile', [
        ['file', d.name, 'file'], ['format', d.format],
        ['command line', d.command === null ? 'not recorded' : d.command, 'command'],
        ['host', d.host === null ? 'not recorded' : d.host, 'host'],
        ['started', d.start_ns ? new Date(d.start_ns / 1e6).toISOString().replace('T', ' ').replace('Z', ' UTC') : 'not recorded'],
        ['duration', d.heap ? `${sec(d.heap.span)} (first to last heap event)` : d.duration_ns ? sec(d.duration_ns) : d.time_span ? `${sec(d.time_span[1] - d.time_span[0])} (first to last sample)` : 'not recorded', 'duration'],
        ['read by', `kiln ${d.kiln_version}`, 'version'],
      ]),
      ...section('Recording', [
        ...(d.heap ? [['event', 'every allocation and free (kiln heap trace)', 'event']] : [
          ['event', ev, 'event'], ['period', period, 'period'],
          ['samples', num(d.samples), 'samples'], ['lost', d.lost === null ? 'none reported' : num(d.lost), 'lost']]),
        ...d.types.map((t) => [`total ${t.type}`, `${t.total_str} (${t.unit})`]),
        ...census(d),
      ]),
    ];
    if (d.heap) {
      const h = d.heap;
      const b = (v) => fmtValue(Math.round(v), 'bytes');
      out.push(...section('Heap (the whole trace)', [
        ['calls to allocation functions', num(h.calls), 'calls'],
        ['bytes allocated', b(h.allocated)],
        ['temporary allocations', `${num(h.temporary)}${h.calls ? ` (${(100 * h.temporary / h.calls).toFixed(2)}% of the calls)` : ''}`, 'temporary'],
        ['peak heap', `${b(h.peak)} in ${num(h.peak_objs)} blocks, ${sec(h.peak_t)} after the start`, 'peak'],
        ['leaked', `${b(h.leaked)} in ${num(h.leaked_objs)} blocks${h.ended ? '' : ' (the process did not exit normally: live at the end)'}`, 'leaked'],
        ['peak RSS', h.peak_rss === null ? 'not recorded (the trace does not sample RSS)' : b(h.peak_rss)],
        ['freed by another thread', num(h.cross_thread)],
        ['events lost', num(h.lost)],
        ['sampling', h.sample_bytes ? `one allocation per ${b(h.sample_bytes)} on average (estimates)` : 'every allocation'],
        ['process', `pid ${h.pid}, ${num(h.threads)} threads, ${sec(h.span)} traced`],
      ]));
    }
    const s = d.selection;
    const ranged = state.t0 && state.t1;
    out.push(...section('This selection', [
      ['sample type', `${s.type} (${s.unit})`],
      ['total', s.total_str, 'sel-total'],
      ['samples', num(s.samples), 'sel-samples'],
      ['filters', [state.focus && `focus ${state.focus}`, state.ignore && `ignore ${state.ignore}`,
        state.hide && `hide ${state.hide}`, ranged && `${sec(+state.t0)} – ${sec(+state.t1)}`].filter(Boolean).join(', ') || 'none'],
      ...census(s),
    ]));
    out.push(...section('Inputs', d.inputs.map((x, i) => [`${i}${x.shown ? ' (shown)' : ''}`, `${x.name} (${x.format})`])));
    if (d.base) out.push(...section('Diff base', [['file', `${d.base.name} (${d.base.format})`]]));
    if (d.comments.length) out.push(...section('Comments in the file', d.comments.map((c, i) => [String(i + 1), c])));
    $('summary').replaceChildren(...out);
  }

  return { render, wire() {} };
})();
