#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Reads `perf script` text the way the Firefox Profiler's importer does
// (firefox-devtools/profiler src/profile-logic/import/linux-perf.js: its
// parsing rules, written again here) and prints what a user of that
// viewer would see: each function's share of the samples as leaf (self)
// and anywhere on the stack (total), one per line:
//     SELF% TOTAL% NAME
// and first a line "samples N threads T ordered 0|1".
// The rules: a record starts at a line matching /^(.*)\s+([\d.]+):/ (the
// time stamp in seconds), the thread from /^(.*)\s+(?:(\d+)\/)?(\d+)\b/
// before it; frame lines follow up to a blank line, each
// /^\s*(\w+)\s*(.+) \((\S*)\)/ with any +0xOFFSET stripped from the name;
// a record without frames is dropped; every record is one sample, whatever
// its period; samples are sorted by time per thread.
'use strict';
const fs = require('fs');

const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n');
const self = new Map(), total = new Map(), threads = new Map();
let n = 0, i = 0, ordered = true;

while (i < lines.length) {
  const line = lines[i++];
  if (line === '' || line.startsWith('#')) continue;
  const m = /^(.*)\s+([\d.]+):/.exec(line);
  if (!m) continue;
  const time = parseFloat(m[2]) * 1000;
  const t = /^(.*)\s+(?:(\d+)\/)?(\d+)\b/.exec(m[1]);
  if (!t) continue;
  const tid = Number(t[3] || 0);
  const stack = [];
  while (i < lines.length) {
    const fl = lines[i++];
    if (fl.trim() === '') break;
    const f = /^\s*(\w+)\s*(.+) \((\S*)\)/.exec(fl);
    if (!f) continue;
    const name = f[2].replace(/\+0x[\da-f]+$/, '');
    if (name.startsWith('(')) continue;
    stack.push(name);
  }
  if (!stack.length) continue;
  const last = threads.get(tid);
  if (last !== undefined && time < last) ordered = false;
  threads.set(tid, time);
  n++;
  self.set(stack[0], (self.get(stack[0]) || 0) + 1);
  for (const name of new Set(stack)) total.set(name, (total.get(name) || 0) + 1);
}
console.log(`samples ${n} threads ${threads.size} ordered ${ordered ? 1 : 0}`);
for (const [name, c] of [...total].sort((a, b) => b[1] - a[1]))
  console.log(`${(100 * (self.get(name) || 0) / n).toFixed(2)} ` +
              `${(100 * c / n).toFixed(2)} ${name}`);
