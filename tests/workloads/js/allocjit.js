// SPDX-License-Identifier: Apache-2.0
// A JIT workload for kiln heap's tests (tests/e2e/t840): a hot JS
// function V8 compiles (named in /tmp/perf-PID.map with
// --perf-basic-prof) that allocates Buffers, whose memory node takes
// with calloc() through V8's builtins (run from node's second mapping of
// its own file).  A fixed amount of work: argv[2] rounds (default 300);
// argv[3], if given, receives the PID.
'use strict';
if (process.argv[3])
  require('fs').writeFileSync(process.argv[3], String(process.pid));
function kilnMakeBuffers(n) {
  const a = [];
  for (let i = 0; i < n; i++)
    a.push(Buffer.alloc(4096 + (i % 7)));
  return a.length;
}
const rounds = Number(process.argv[2] || 300);
let t = 0;
for (let r = 0; r < rounds; r++)
  t += kilnMakeBuffers(200);
console.log(t);
