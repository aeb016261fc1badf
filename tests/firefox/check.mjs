// SPDX-License-Identifier: Apache-2.0
// Checks a Firefox Profiler processed profile (kiln convert --to firefox)
// against the format's documented schema (firefox-devtools/profiler
// src/types/profile.ts and docs-developer/CHANGELOG-formats.md, version 70):
// every table's columns as long as its length, every index in range
// (stack -> frame -> func -> resource/source -> string, frame -> lib,
// prefixOffset backwards), string indexes into shared.stringArray, samples
// and counter times in order, and meta.preprocessedProfileVersion one the
// profiler upgrades (at most MAX_VERSION).  Then prints what the tests
// compare:
//   thread NAME pid PID tid TID samples N weight W markers M span MS
//   cpu TID MS                     (threadCPUDelta added up, where present)
//   marker TID NAME START_MS DUR_MS STACKLEAF
//   counter NAME samples N max BYTES
//   self THREAD FUNC PERCENT        (self weight by leaf function)
//   stack TID ROOT;...;LEAF WEIGHT  (weight by whole stack, root first)
// Usage: node check.mjs FILE
import { readFileSync } from 'node:fs';

const MAX_VERSION = 75; // @firefox-devtools/profiler-cli 0.10.0 upgrades to 75
const file = process.argv[2];
const p = JSON.parse(readFileSync(file, 'utf8'));
let errors = 0;
function bad(msg) {
  console.error(`check.mjs: ${file}: ${msg}`);
  errors++;
}
function table(name, t, cols) {
  if (!t || typeof t.length !== 'number') return bad(`${name}: no length`);
  for (const c of cols)
    if (!Array.isArray(t[c]) || t[c].length !== t.length)
      bad(`${name}.${c}: ${Array.isArray(t[c]) ? t[c].length : 'missing'} entries, length ${t.length}`);
}
function idx(name, v, n, nullable) {
  if (v === null && nullable) return;
  if (!Number.isInteger(v) || v < 0 || v >= n) bad(`${name}: ${v} out of [0, ${n})`);
}

const m = p.meta || {};
const v = m.preprocessedProfileVersion;
if (!Number.isInteger(v) || v < 60 || v > MAX_VERSION)
  bad(`meta.preprocessedProfileVersion ${v}: not one the profiler upgrades (60..${MAX_VERSION} with shared tables)`);
if (typeof m.interval !== 'number' || typeof m.startTime !== 'number') bad('meta: interval, startTime');
if (!Array.isArray(m.categories) || !m.categories.some((c) => c.color === 'grey'))
  bad('meta.categories: needs a grey (default) category');
if (!Array.isArray(m.markerSchema)) bad('meta.markerSchema missing');
const ncat = m.categories ? m.categories.length : 0;
const s = p.shared || {};
const strs = s.stringArray || [];
if (!Array.isArray(s.stringArray)) bad('shared.stringArray missing');
table('stackTable', s.stackTable, ['frame', 'prefixOffset']);
table('frameTable', s.frameTable, ['address', 'lib', 'inlineDepth', 'category', 'subcategory', 'func',
  'nativeSymbol', 'innerWindowID', 'line', 'column', 'originalLocation']);
table('funcTable', s.funcTable, ['name', 'isJS', 'relevantForJS', 'resource', 'source', 'lineNumber',
  'columnNumber', 'originalLocation']);
table('resourceTable', s.resourceTable, ['name', 'host', 'type']);
table('nativeSymbols', s.nativeSymbols, ['libIndex', 'address', 'name', 'functionSize']);
table('sources', s.sources, ['id', 'filename', 'startLine', 'startColumn', 'sourceMapURL', 'content']);
table('sourceLocationTable', s.sourceLocationTable, ['source', 'line', 'column']);
if (errors) process.exit(1);
const st = s.stackTable, fr = s.frameTable, fu = s.funcTable, rs = s.resourceTable;
const libs = p.libs || [];
for (let i = 0; i < st.length; i++) {
  idx('stackTable.frame', st.frame[i], fr.length);
  const o = st.prefixOffset[i];
  if (!Number.isInteger(o) || o < 0 || o > i) bad(`stackTable.prefixOffset[${i}] ${o}`);
}
for (let i = 0; i < fr.length; i++) {
  idx('frameTable.func', fr.func[i], fu.length);
  if (fr.lib[i] !== -1) idx('frameTable.lib', fr.lib[i], libs.length);
  idx('frameTable.category', fr.category[i], ncat, true);
  if (!Number.isInteger(fr.inlineDepth[i]) || fr.inlineDepth[i] < 0) bad('frameTable.inlineDepth');
}
for (let i = 0; i < fu.length; i++) {
  idx('funcTable.name', fu.name[i], strs.length);
  if (fu.resource[i] !== -1) idx('funcTable.resource', fu.resource[i], rs.length);
  idx('funcTable.source', fu.source[i], s.sources.length, true);
}
for (let i = 0; i < rs.length; i++) idx('resourceTable.name', rs.name[i], strs.length);
for (let i = 0; i < s.sources.length; i++) idx('sources.filename', s.sources.filename[i], strs.length);
for (const l of libs)
  for (const k of ['name', 'path', 'debugName', 'debugPath', 'breakpadId'])
    if (typeof l[k] !== 'string') bad(`lib.${k} missing`);

// The leaf function of a stack, and its functions root first.
const leaf = (stack) => strs[fu.name[fr.func[st.frame[stack]]]];
function chain(i) {
  const names = [];
  for (;;) {
    names.push(leaf(i));
    if (!st.prefixOffset[i]) return names.reverse().join(';');
    i -= st.prefixOffset[i];
  }
}
const out = [];
(p.threads || []).forEach((t) => {
  const sm = t.samples, mk = t.markers;
  table(`thread ${t.name} samples`, sm, ['stack', 'time', ...(sm.weight ? ['weight'] : []),
    ...(sm.threadCPUDelta ? ['threadCPUDelta'] : [])]);
  table(`thread ${t.name} markers`, mk, ['data', 'name', 'startTime', 'endTime', 'phase', 'category']);
  if (typeof t.pid !== 'string') bad(`thread ${t.name}: pid is not a string`);
  if (!['samples', 'bytes', 'tracing-ms'].includes(sm.weightType)) bad(`weightType ${sm.weightType}`);
  const self = new Map(), stacks = new Map();
  let total = 0;
  for (let i = 0; i < sm.length; i++) {
    idx('samples.stack', sm.stack[i], st.length, true);
    if (i && sm.time[i] < sm.time[i - 1]) bad(`thread ${t.name}: sample ${i} before the one before`);
    const w = sm.weight ? sm.weight[i] : 1;
    total += w;
    if (sm.stack[i] !== null) {
      self.set(leaf(sm.stack[i]), (self.get(leaf(sm.stack[i])) || 0) + w);
      const c = chain(sm.stack[i]);
      stacks.set(c, (stacks.get(c) || 0) + w);
    }
  }
  const span = sm.length ? sm.time[sm.length - 1] - sm.time[0] : 0;
  out.push(`thread ${t.name} pid ${t.pid} tid ${t.tid} samples ${sm.length} weight ${+total.toFixed(3)} markers ${mk.length} span ${span.toFixed(3)}`);
  if (sm.threadCPUDelta)
    out.push(`cpu ${t.tid} ${(sm.threadCPUDelta.reduce((a, b) => a + b, 0) / 1e6).toFixed(3)}`);
  for (let i = 0; i < mk.length; i++) {
    idx('markers.name', mk.name[i], strs.length);
    idx('markers.category', mk.category[i], ncat);
    const d = mk.data[i];
    if (d && d.cause) idx('marker cause.stack', d.cause.stack, st.length);
    if (d && !m.markerSchema.some((x) => x.name === d.type)) bad(`marker type ${d.type} has no schema`);
    out.push(`marker ${t.tid} ${strs[mk.name[i]]} ${mk.startTime[i].toFixed(3)} ${(mk.endTime[i] - mk.startTime[i]).toFixed(3)} ${d && d.cause ? leaf(d.cause.stack) : '-'}`);
  }
  for (const [f, w] of [...self].sort((a, b) => b[1] - a[1]))
    out.push(`self ${t.name} ${f} ${(100 * w / total).toFixed(2)}`);
  for (const [c, w] of stacks) out.push(`stack ${t.tid} ${c} ${+w.toFixed(3)}`);
});
for (const c of p.counters || []) {
  table(`counter ${c.name} samples`, c.samples, ['time', 'count']);
  idx('counter.mainThreadIndex', c.mainThreadIndex, (p.threads || []).length);
  if (!c.display || !Array.isArray(c.display.tooltipRows)) bad(`counter ${c.name}: no display (v62, v63)`);
  let acc = 0, max = 0;
  for (let i = 0; i < c.samples.length; i++) {
    if (i && c.samples.time[i] < c.samples.time[i - 1]) bad(`counter ${c.name}: time order`);
    acc += c.samples.count[i];
    max = Math.max(max, acc);
  }
  out.push(`counter ${c.name} samples ${c.samples.length} max ${max}`);
}
if (errors) process.exit(1);
console.log(out.join('\n'));
