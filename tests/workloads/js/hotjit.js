// SPDX-License-Identifier: Apache-2.0
// A JIT workload for kiln's tests (tests/e2e/t970, t971): a hot JS
// function V8 compiles (named in /tmp/perf-PID.map with --perf-basic-prof)
// and Map lookups that run in V8's embedded builtins (node maps them a
// second time from its own file).  A fixed amount of work, not a time:
// argv[2] rounds (default 300); argv[3], if given, receives the PID.
'use strict';
const fs = require('fs');
if (process.argv[3])
  fs.writeFileSync(process.argv[3], String(process.pid));
function kilnHotLoop(n) {
  let s = 0;
  for (let i = 0; i < n; i++)
    s = (s + i * i) % 1000003;
  return s;
}
const m = new Map();
for (let i = 0; i < 1000; i++)
  m.set('k' + i, i);
function kilnMapWork(n) {
  let s = 0;
  for (let i = 0; i < n; i++)
    s += m.get('k' + (i % 1000)) | 0;
  return s;
}
const rounds = Number(process.argv[2] || 300);
let t = 0;
for (let r = 0; r < rounds; r++)
  t += kilnHotLoop(100000) + kilnMapWork(20000);
console.log(t);
